# memory.ru - each process that loads it holds a known amount of memory,
# and each request does a known amount of CPU: the ground truth for
# budgets (--memory, --cpus).
# Knobs (env): MEMORY_PER_WORKER (bytes, or with K/M/G: "64M"; default 0),
# allocated and written at load so its pages are real, and held for the
# process's life; CPU_PER_REQUEST_MS (default 2), a busy loop on the
# thread's own CPU clock, so a throttled process still does the full amount;
# WAIT_PER_REQUEST_MS (default 0), a sleep after the CPU, as a request
# waits on a database: what lets a second thread in a worker help.
# The rackup is loaded once per worker by puma in cluster mode without
# preload_app! and by unicorn without preload_app: each worker holds its
# own copy. With preload the master loads it once and the workers share
# its pages (copy-on-write) until they write them.
# Known-good answer: GET / -> 200, body "memory app: holds N bytes, busy M ms".
require "rack"

def rackbench_size(text)
  m = text.to_s.strip.match(/\A(\d+(?:\.\d+)?)\s*([KMG]?)i?B?\z/i) or return 0
  (m[1].to_f * { "" => 1, "K" => 1 << 10, "M" => 1 << 20, "G" => 1 << 30 }[m[2].upcase]).round
end

MEMORY_HELD_BYTES = rackbench_size(ENV.fetch("MEMORY_PER_WORKER", "0"))
# "x" * n writes every byte: the pages are touched, not just reserved.
MEMORY_HELD = "x" * MEMORY_HELD_BYTES
CPU_PER_REQUEST_MS = Float(ENV.fetch("CPU_PER_REQUEST_MS", "2"))
WAIT_PER_REQUEST_S = Float(ENV.fetch("WAIT_PER_REQUEST_MS", "0")) / 1000.0

run lambda { |_env|
  clock = Process::CLOCK_THREAD_CPUTIME_ID
  stop = Process.clock_gettime(clock) + CPU_PER_REQUEST_MS / 1000.0
  n = 0
  n += 1 while Process.clock_gettime(clock) < stop
  sleep(WAIT_PER_REQUEST_S) if WAIT_PER_REQUEST_S > 0
  body = "memory app: holds #{MEMORY_HELD.bytesize} bytes, busy #{CPU_PER_REQUEST_MS.round(3)} ms"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
