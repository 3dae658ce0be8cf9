-- POST /api/v1/orders with a merchant_order_id unique to each request:
-- BENCH_PREFIX (one per wrk run) .. wrk thread number .. per-thread counter.
local prefix = os.getenv("BENCH_PREFIX") or "bench"
local token = os.getenv("BENCH_TOKEN") or ""
local threads = 0
local counter = 0
local headers = {
  ["Authorization"] = "Bearer " .. token,
  ["Content-Type"] = "application/json",
}

function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"item_id": 1001, "merchant_order_id": "%s-%d-%d"}', prefix, thread_id or 0, counter)
  return wrk.format("POST", nil, headers, body)
end
