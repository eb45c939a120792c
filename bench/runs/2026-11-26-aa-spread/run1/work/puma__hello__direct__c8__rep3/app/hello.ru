# hello.ru - "hello world": the baseline (seeds 001 and 004).
# Knobs: none. Content-Length is set, so every server can keep the
# connection alive. Known-good answer: GET / -> 200, body "hello world".
body = "hello world".freeze
headers = { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }.freeze
run ->(_env) { [200, headers.dup, [body]] }
