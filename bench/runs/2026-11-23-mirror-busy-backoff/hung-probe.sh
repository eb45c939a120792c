B=${BIN:-target/release/rackbench}
python3 -c '
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",18404)); s.listen(4096); held=[]
while True:
    c,_=s.accept(); held.append(c)' & h=$!
$B serve-test --listen 127.0.0.1:18401 >/dev/null 2>&1 & p=$!
sleep 0.5
$B mirror --listen 127.0.0.1:18400 --primary http://127.0.0.1:18401 --shadow hung=http://127.0.0.1:18404 -d 14s --json 2>${OUT:-/tmp}/hung.log > ${OUT:-/tmp}/hung.json & m=$!
sleep 0.5
$B load http://127.0.0.1:18400/ --rate 2000 -d 12s -c 64 --json > ${OUT:-/tmp}/hungload.json 2>/dev/null
wait $m; kill $h $p; wait
python3 -c "
import json;d=json.load(open('${OUT:-/tmp}/hung.json'));s=d['shadows'][0];print({k:s[k] for k in ['sent','dropped','backed_off','backoffs','timeouts','in_flight']}, d['requests'])"
tail -2 ${OUT:-/tmp}/hung.log | cut -c1-220
