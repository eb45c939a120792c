# leak.ru - each request leaks a known number of bytes, held forever: the
# ground truth for soaks (--soak), whose fitted growth per worker must
# match rate x bytes x 3600 per hour.
# Knobs (env): LEAK_BYTES_PER_REQUEST (bytes, or with K/M/G: "16K";
# default 16K). Each request appends a String of that size, every byte
# written (so its pages are real), to a global array that nothing ever
# empties. Memory grows in the worker that served the request, as its own
# private pages (USS). LEAK_BYTES_PER_REQUEST=0 leaks nothing: the
# non-leaking control, on the same code path.
# Known-good answer: GET / -> 200, body "leak app: N bytes a request, M held".
require "rack"

def rackbench_size(text)
  m = text.to_s.strip.match(/\A(\d+(?:\.\d+)?)\s*([KMG]?)i?B?\z/i) or return 0
  (m[1].to_f * { "" => 1, "K" => 1 << 10, "M" => 1 << 20, "G" => 1 << 30 }[m[2].upcase]).round
end

LEAK_BYTES_PER_REQUEST = rackbench_size(ENV.fetch("LEAK_BYTES_PER_REQUEST", "16K"))
LEAKED = []
LEAK_LOCK = Mutex.new

run lambda { |_env|
  # "x" * n writes every byte: the pages are touched, not just reserved.
  chunk = "x" * LEAK_BYTES_PER_REQUEST
  # With 0 nothing is held (not even the empty String and its slot in
  # LEAKED, some 48 bytes a request): the same work per request, garbage
  # at once, so the app keeps nothing, the soaks' ground truth of no leak.
  held = LEAK_LOCK.synchronize do
    LEAKED << chunk unless chunk.empty?
    LEAKED.size
  end
  body = "leak app: #{LEAK_BYTES_PER_REQUEST} bytes a request, #{held} held"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
}
