# allocate.ru - a request that allocates heavily and keeps nothing: many
# short-lived objects (small arrays, strings, hashes) and some large
# strings, the load `rackbench tune gc` is meant for (issue 41). On a
# default heap the GC runs every request or two; a heap warmed up with
# room for many requests' objects runs it far less.
# Knobs: ?objects=N (default env ALLOCATE_OBJECTS, else 3000; at most
# 200000): N small arrays of an integer, a string and a hash; ?big=M
# (default env ALLOCATE_BIG, else 4; at most 1000): M strings of 100 kB.
# Known-good answer: GET / -> 200, body "allocated 3000 objects and 4 large strings".
require "rack"

module Allocate
  def self.work(objects, big)
    rows = Array.new(objects) { |i| [i, "row #{i}", { id: i }] }
    large = Array.new(big) { |i| ("x" * 100_000) << i.to_s }
    "allocated #{rows.size} objects and #{large.size} large strings"
  end

  def self.knob(params, name, env, default, max)
    v = (params[name] || ENV[env] || default).to_i
    v.clamp(0, max)
  end
end

run lambda { |env|
  params = Rack::Utils.parse_query(env["QUERY_STRING"].to_s)
  objects = Allocate.knob(params, "objects", "ALLOCATE_OBJECTS", 3000, 200_000)
  big = Allocate.knob(params, "big", "ALLOCATE_BIG", 4, 1000)
  [200, { "content-type" => "text/plain" }, [Allocate.work(objects, big)]]
}
