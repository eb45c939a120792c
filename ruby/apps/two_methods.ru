# two_methods.ru - each request spends its CPU in two methods in a known
# ratio: the profiler's ground truth (issue 40, tests/profile.rs).
# Knobs: ?a=N&b=M, the loop iterations of TwoMethods.spend_a and
# TwoMethods.spend_b (default 300000 and 100000: a 3:1 ratio; each at
# most 50000000); the defaults come from the server's environment when
# TWO_METHODS_A / TWO_METHODS_B are set, so an A/B can give the two
# sides a known difference in work per request with
# `--vary env.TWO_METHODS_A=3000000,3150000` (issue 38). Both loops run
# the same instructions on small integers (no allocation, no call out of
# the method), so an iteration costs the same in either and their CPU is
# in the ratio a:b. To profile it, make a
# request last many sample periods (?a=3000000&b=1000000, about 90 ms, at
# rbspy's 100 Hz): a request near one period lets the samples lock onto
# its phase and split unfairly.
# Known-good answer: GET / -> 200, body "spent 300000:100000 = 19104".
require "rack"

module TwoMethods
  def self.spend_a(n)
    x = 0
    i = 0
    while i < n
      x = (x * 31 + i) & 0xffff
      i += 1
    end
    x
  end

  def self.spend_b(n)
    x = 0
    i = 0
    while i < n
      x = (x * 31 + i) & 0xffff
      i += 1
    end
    x
  end
end

run lambda { |env|
  q = Rack::Utils.parse_query(env["QUERY_STRING"].to_s)
  a = q.fetch("a", ENV.fetch("TWO_METHODS_A", "300000")).to_i.clamp(0, 50_000_000)
  b = q.fetch("b", ENV.fetch("TWO_METHODS_B", "100000")).to_i.clamp(0, 50_000_000)
  x = TwoMethods.spend_a(a) ^ TwoMethods.spend_b(b)
  body = "spent #{a}:#{b} = #{x}"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
