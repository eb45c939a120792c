# Unicorn config rendered by rackbench for each trial.
listen "{{listen}}", backlog: {{backlog}}
worker_processes {{workers}}
preload_app {{preload}}
timeout {{timeout}}
pid "{{pidfile}}"
