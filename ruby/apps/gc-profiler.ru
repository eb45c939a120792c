# gc-profiler.ru - an allocating request (builds and joins many small
# strings and arrays, like a template render), with GC::Profiler on when
# the server's environment has GC_PROFILER=on (seed 002: turning GC
# profiling off saved ~100 ms a request on Ruby 1.9.3). While on, the
# profile is read and cleared every 100 requests, as New Relic's agent did.
# Knobs: ?rows=N (default 200, at most 20000); env GC_PROFILER=on|off.
# Known-good answer: GET / -> 200, body "rendered 200 rows, ..." (the rows' size).
require "rack"

PROFILING = ENV.fetch("GC_PROFILER", "off") == "on"
GC::Profiler.enable if PROFILING
served = 0

run lambda { |env|
  rows = Rack::Utils.parse_query(env["QUERY_STRING"].to_s).fetch("rows", "200").to_i.clamp(1, 20_000)
  html = Array.new(rows) { |i| "<tr><td>#{i}</td><td>#{"x" * (i % 64)}</td><td>#{i * 31 % 97}</td></tr>" }.join("\n")
  served += 1
  if PROFILING && (served % 100).zero?
    GC::Profiler.total_time
    GC::Profiler.clear
  end
  body = "rendered #{rows} rows, #{html.bytesize} bytes"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
