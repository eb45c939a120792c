-- wrk with HTTP pipelining: every write is DEPTH requests back to back
-- (default 16), and wrk waits for all their responses before the next
-- write -- the same shape as `rackbench load --pipeline DEPTH`.
--
--   wrk -t1 -c50 -d10s -s bench/wrk-pipeline.lua http://127.0.0.1:8080/hello.txt [-- DEPTH]
--
-- wrk counts the requests in what request() returns (it parses the
-- buffer once at start), so each response is counted, as with its own
-- pipeline.lua example; this script builds the requests from the URL's
-- path instead of a fixed list.

local batch

init = function(args)
  local depth = tonumber(args[1] or "16")
  if depth == nil or depth < 1 then
    error("wrk-pipeline.lua: the depth must be a whole number >= 1, got " .. tostring(args[1]))
  end
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format(nil, wrk.path)
  end
  batch = table.concat(r)
end

request = function()
  return batch
end
