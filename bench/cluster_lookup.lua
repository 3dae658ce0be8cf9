-- GET order lookups rotating over every sandbox listed in the file BENCH_TARGETS, one
-- "PATH TOKEN" line each (PATH: a sandbox's /_mock/sandboxes/{id}/api/v1/orders/{order});
-- the URL wrk is given names the router only. Each thread starts at its own place in
-- the list, so the threads' first requests go to different sandboxes.
local targets = {}
for line in io.lines(os.getenv("BENCH_TARGETS")) do
  local path, token = line:match("^(%S+)%s+(%S+)$")
  if path then
    targets[#targets + 1] = {path, {["Authorization"] = "Bearer " .. token}}
  end
end
local threads = 0
local counter = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function init(args)
  counter = thread_id or 0
end

function request()
  counter = counter + 1
  local target = targets[(counter % #targets) + 1]
  return wrk.format("GET", target[1], target[2])
end
