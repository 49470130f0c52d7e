# /etc/svcd/status.hcl — svcd status-wrapper (deploy/systemd/svcd-status.service).
# Read-only: it serves the status panel and reads the daemon's
# /v1/system/state; it needs no token and keeps no state.
status_listen     = "127.0.0.1:4318"
status_daemon_url = "http://127.0.0.1:4317"
log_json          = true
# To serve the panel on another interface, add its name here and widen
# IPAddressAllow= in the unit:
# allowed_hosts = ["status.internal"]
