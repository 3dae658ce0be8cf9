-- POST /api/v1/auth/token/client with the API key from BENCH_API_KEY.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format('{"api_key": "%s"}', os.getenv("BENCH_API_KEY") or "ak_bench")
