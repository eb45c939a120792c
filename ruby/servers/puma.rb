# Puma config for users who prefer a file (the built-in adapter uses flags).
bind "{{listen_url}}"
workers {{workers}}
threads {{threads}}, {{threads}}
environment "production"
pidfile "{{pidfile}}"
