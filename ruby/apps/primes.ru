# primes.ru - sums the first N primes with Ruby's Prime library (seed 004).
# Knobs: ?count=N (default 1000, at most 100000).
# Known-good answer: GET / -> 200, body "sum of the first 1000 primes = 3682913".
require "rack"
require "prime"

run lambda { |env|
  count = Rack::Utils.parse_query(env["QUERY_STRING"].to_s).fetch("count", "1000").to_i.clamp(1, 100_000)
  body = "sum of the first #{count} primes = #{Prime.first(count).sum}"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
