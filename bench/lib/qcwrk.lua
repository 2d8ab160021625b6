-- wrk script of bench/lib/qcclients.py's keepalive model: every
-- connection a closed-loop user that thinks QC_THINK_MS milliseconds
-- (exponential; 0: none) between a reply and its next request; replies
-- counted by status class in each thread (wrk itself totals only the
-- non-2xx/3xx) and summed at the end on one line that starts with QC.

local threads = {}
local think = tonumber(os.getenv("QC_THINK_MS") or "0") or 0

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   c = {0, 0, 0, 0, 0}
end

function delay()
   if think > 0 then
      return -think * math.log(1 - math.random())
   end
   return 0
end

function response(status, headers, body)
   local k = math.floor(status / 100)
   if k >= 1 and k <= 5 then
      c[k] = c[k] + 1
   end
end

function done(summary, latency, requests)
   local t = {0, 0, 0, 0, 0}
   for _, thread in ipairs(threads) do
      local tc = thread:get("c")
      for k = 1, 5 do
         t[k] = t[k] + tc[k]
      end
   end
   local e = summary.errors
   io.write(string.format("QC s1xx %d s2xx %d s3xx %d s4xx %d s5xx %d "
      .. "requests %d connect %d read %d write %d status %d timeout %d "
      .. "p50_us %d p95_us %d duration_us %d\n",
      t[1], t[2], t[3], t[4], t[5], summary.requests, e.connect, e.read,
      e.write, e.status, e.timeout, latency:percentile(50),
      latency:percentile(95), summary.duration))
end
