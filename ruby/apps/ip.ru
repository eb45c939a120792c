# ip.ru - replies with the client's address (seed 000: the JMeter test
# asserted the body contained the IP).
# Knobs: none. Known-good answer: GET / from 127.0.0.1 -> 200, body "127.0.0.1".
run lambda { |env|
  ip = env["REMOTE_ADDR"].to_s
  [200, { "content-type" => "text/plain", "content-length" => ip.bytesize.to_s }, [ip]]
}
