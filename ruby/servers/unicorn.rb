# Unicorn config rendered by rackbench for each trial.
# listen takes "host:port" or a socket path; unicorn unlinks a stale socket.
# Unicorn logs only start/stop lines to stderr; with --env production it
# adds no request logger (development and deployment would add
# Rack::CommonLogger).
listen "{{listen}}", backlog: {{backlog}}
worker_processes {{workers}}
preload_app {{preload}}
timeout {{timeout}}
pid "{{pidfile}}"
