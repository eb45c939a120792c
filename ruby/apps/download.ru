# download.ru - a big answer: a report download or a large JSON export.
# Knobs: query `?mib=8` (default: env DOWNLOAD_MIB, else 8; max 1024), the
# body's size in MiB. The body starts with "download of N bytes", is
# filled with "a" and ends with "end of download", so a check finds text
# at its start and, only having read it all, at its end. Each size is
# built once per process and kept.
# Known-good answer: GET /?mib=8 -> 200, body "download of 8388608 bytes".
require "rack"

DOWNLOAD_DEFAULT_MIB = Integer(ENV.fetch("DOWNLOAD_MIB", "8"))
DOWNLOAD_BODIES = {}

run lambda { |env|
  params = Rack::Utils.parse_query(env["QUERY_STRING"].to_s)
  mib = Integer(params.fetch("mib", DOWNLOAD_DEFAULT_MIB), exception: false)
  if mib.nil? || mib < 0 || mib > 1024
    next [400, { "Content-Type" => "text/plain" }, ["mib must be 0 to 1024\n"]]
  end
  body = DOWNLOAD_BODIES[mib] ||= begin
    bytes = mib << 20
    head = "download of #{bytes} bytes\n"
    tail = "\nend of download\n"
    (head + "a" * [bytes - head.bytesize - tail.bytesize, 0].max + tail).freeze
  end
  [200, { "Content-Type" => "application/octet-stream", "Content-Length" => body.bytesize.to_s }, [body]]
}
