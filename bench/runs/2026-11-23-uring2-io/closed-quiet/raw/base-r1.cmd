/tmp/rb-uring-base load http://127.0.0.1:29642/hello.txt -c 50 -t 1 -d 5s --json
