# /etc/svcd/svcd.hcl — svcd serve (deploy/systemd/svcd.service).
# Keys and their SVC_* variables: README.md "Configuration", docs/hostops.md,
# docs/ha.md. Secrets (the shared token) belong in svcd.env, not here.

listen   = "127.0.0.1:4317"
data_dir = "/var/lib/svcd" # StateDirectory=svcd
node_id  = "node1"

# Every state-changing route demands the shared token (docs/security.md):
# no local process without it can switch the mode, a conversation, or have a
# report typed into a chat. svcctl and the status wrapper send the token.
require_token = "writes"

# Logs: stderr goes to the journal; log_file keeps a rotated copy the daemon
# rotates itself (no logrotate, no SIGHUP): at most 64 MiB x (1 + 10) here.
log_level            = "info"
log_json             = true
log_file             = "/var/log/svcd/svcd.log" # LogsDirectory=svcd
log_rotate_bytes     = 67108864
log_rotate_max_files = 10

# Host names clients use for this daemon besides loopback (a reverse proxy's
# upstream Host header, docs/deploy.md).
# allowed_hosts = ["svcd.internal"]

# Host operations: confine the file routes (and give the unit ReadWritePaths=
# for these folders: ProtectSystem=strict leaves only /var/lib/svcd writable).
# hostops_allowed_roots = ["/srv/work"]

# The exec sandbox (issue 20). With the plain unit svcd runs as the svcd user:
# exec_user and exec_network = "none" need the root-sandbox.conf drop-in.
# exec_sandbox       = "best-effort"
# exec_user          = "svcd-exec"
# exec_network       = "none"

# Two-node HA with a witness (docs/ha.md, docs/deploy.md). Node 1 bootstraps;
# node 2 (and the witness) join through a member (its raft port with cluster TLS,
# its API without) and never bootstrap.
# Every node and the witness need the same SVC_SHARED_TOKEN (svcd.env).
# node_id   = "n1"                 # "n2" on the second node
# listen    = "10.0.0.1:4317"      # the node's private address
# raft_addr = "10.0.0.1:7001"
# tls_ca_file   = "/etc/svcd/tls/ca.pem"      # mutual TLS between nodes (svcd tls ca create /
# tls_cert_file = "/etc/svcd/tls/n1.pem"      # svcd tls cert create, docs/ha.md); a raft_addr
# tls_key_file  = "/etc/svcd/tls/n1-key.pem"  # off loopback needs them or cluster_tls = "off"
# join      = ["10.0.0.1:7001"]    # on node 2 only: node 1's raft address with cluster TLS (its API, 10.0.0.1:4317, without)
