-- wrk script of scripts/bench-http: each thread reads the paths file once
-- (one request path a line, written by bench/paths_test.go), formats
-- every request up front, and sends them in order, round-robin, thread k of
-- T starting k/T of the way into the file. wrk's -H headers (an
-- Authorization header, say) are in wrk.headers when init runs.
--
--   wrk -t1 -c32 -d10s --latency -s paths.lua https://127.0.0.1:18450 -- PATHS_FILE [THREADS]
--
-- done() prints one line for the script to read:
--   RESULT requests=N seconds=S rps=R p50_us=A p99_us=B non2xx=C errors=D

local next_id = 1

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

local reqs, n, i

function init(args)
  local file = args[1]
  if file == nil then
    error("paths.lua: give the paths file after --")
  end
  local threads = tonumber(args[2] or "1")
  reqs = {}
  for line in io.lines(file) do
    if line ~= "" then
      reqs[#reqs + 1] = wrk.format("GET", line)
    end
  end
  n = #reqs
  if n == 0 then
    error("paths.lua: no paths in " .. file)
  end
  i = math.floor(((id or 1) - 1) * n / threads) % n
end

function request()
  i = i + 1
  if i > n then
    i = 1
  end
  return reqs[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format("RESULT requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d non2xx=%d errors=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
