# fib.ru - naive recursive Fibonacci: the CPU-bound case of seed 001.
# Knobs: ?n=N (default 25, at most 35).
# Known-good answer: GET / -> 200, body "fib(25) = 75025".
require "rack"

fib = lambda { |n| n < 2 ? n : fib.(n - 1) + fib.(n - 2) }

run lambda { |env|
  n = Rack::Utils.parse_query(env["QUERY_STRING"].to_s).fetch("n", "25").to_i.clamp(0, 35)
  body = "fib(#{n}) = #{fib.(n)}"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
