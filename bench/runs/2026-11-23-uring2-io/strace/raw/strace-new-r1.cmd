strace -c -f -o /work/wt/uring/bench/runs/2026-11-23-uring2-io/strace-new.txt /tmp/rb-uring-new4 load http://127.0.0.1:32349/hello.txt -c 50 -t 1 -d 3s --json
