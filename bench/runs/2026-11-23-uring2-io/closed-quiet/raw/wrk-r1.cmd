wrk -t1 -c50 -d5s http://127.0.0.1:29642/hello.txt
