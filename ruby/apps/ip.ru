# ip.ru - replies with the client's address (seed 000: the JMeter test
# asserted the body contained the IP).
# Knobs: none. Known-good answer: GET / from 127.0.0.1 -> 200, body "127.0.0.1".
# Behind a proxy it shows the proxy's side: 127.0.0.1 from puma, unicorn,
# thin and passenger on a unix socket, but "0.0.0.0" from uwsgi on one.
run lambda { |env|
  ip = env["REMOTE_ADDR"].to_s
  [200, { "content-type" => "text/plain", "content-length" => ip.bytesize.to_s }, [ip]]
}
