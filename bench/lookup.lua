-- GET one order with the bearer token from BENCH_TOKEN (the URL names the order).
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_TOKEN") or "")
