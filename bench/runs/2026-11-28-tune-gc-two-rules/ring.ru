require "rack"
RING = Array.new(Integer(ENV.fetch("RING", "300000")))
$at = 0
run lambda { |env|
  rows = Array.new(3000) { |i| [i, "row #{i}", { id: i }] }
  keep = Integer(ENV.fetch("KEEP", "2000"))
  keep.times { |i| RING[$at] = "kept #{i}"; $at = ($at + 1) % RING.size }
  [200, { "content-type" => "text/plain" }, ["allocated #{rows.size} objects and kept #{keep}"]]
}
