strace -c -f -o /work/wt/uring/bench/runs/2026-11-23-uring2-io/strace-wrk.txt wrk -t1 -c50 -d3s http://127.0.0.1:32349/hello.txt
