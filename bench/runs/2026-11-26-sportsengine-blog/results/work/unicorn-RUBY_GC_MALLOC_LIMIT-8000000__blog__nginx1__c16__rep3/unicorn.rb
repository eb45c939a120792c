# Unicorn config rendered by rackbench for each trial.
# listen takes "host:port" or a socket path; unicorn unlinks a stale socket.
# Unicorn logs only start/stop lines to stderr; with --env production it
# adds no request logger (development and deployment would add
# Rack::CommonLogger).
listen "/tmp/rb-9756-7/server.sock", backlog: 1024
worker_processes 2
preload_app false
timeout 60
pid "/work/main/bench/runs/2026-11-26-sportsengine-blog/results/work/unicorn-RUBY_GC_MALLOC_LIMIT-8000000__blog__nginx1__c16__rep3/server.pid"
