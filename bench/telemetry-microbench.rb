# Per-request cost of the telemetry middleware alone, in one Ruby process:
# a bare lambda app called 300,000 times against the same app inside
# RackbenchTelemetry::Middleware (no server, no sockets), three rounds.
# Run: ruby bench/telemetry-microbench.rb (from the repository root).
require "rack"
require "fileutils"
require "tmpdir"
dir = Dir.mktmpdir("rb-tel-mb")
at_exit { FileUtils.rm_rf(dir) } # registered first, so it runs after the exit flush
require_relative "../ruby/telemetry/rackbench_telemetry"
ENV["RACKBENCH_TELEMETRY_DIR"] = dir
RackbenchTelemetry.dir = dir
inner = ->(_e) { [200, {}, ["ok"]] }
wrapped = RackbenchTelemetry::Middleware.new(inner)
env = {}
n = 300_000
def t; s = Process.clock_gettime(Process::CLOCK_MONOTONIC); yield; Process.clock_gettime(Process::CLOCK_MONOTONIC) - s; end
3.times do
  a = t { n.times { inner.call(env) } }
  b = t { n.times { wrapped.call(env) } }
  printf("bare %.2f us, wrapped %.2f us, middleware %.2f us/request\n", a / n * 1e6, b / n * 1e6, (b - a) / n * 1e6)
end
