# Puma config for users who prefer a file (the built-in adapter uses flags):
#   puma --config CONFIG APP
# workers 0 is single mode; preload only matters with workers > 0.
bind "{{listen_url}}"
workers {{workers}}
threads {{threads}}, {{threads}}
{{?preload preload_app!}}
environment "production"
log_requests false
pidfile "{{pidfile}}"
