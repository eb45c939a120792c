/tmp/rb-uring-final load http://127.0.0.1:23937/hello.txt -c 50 -t 1 -d 5s --json
