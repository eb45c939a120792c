# sleep.ru - sleeps, then replies: the IO-bound case of seed 001.
# Knobs: ?ms=N milliseconds to sleep (default 100, at most 60000).
# Known-good answer: GET / (or /?ms=100) -> 200, body "slept 100 ms";
# the built-in app sleep-1ms is GET /?ms=1 -> "slept 1 ms", and
# sleep-200ms (puma's long-tail shape) GET /?ms=200 -> "slept 200 ms".
require "rack"

run lambda { |env|
  ms = Rack::Utils.parse_query(env["QUERY_STRING"].to_s).fetch("ms", "100").to_i.clamp(0, 60_000)
  sleep(ms / 1000.0)
  body = "slept #{ms} ms"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
