# /etc/svcd/witness.hcl — svcd witness (deploy/systemd/svcd-witness.service):
# the third raft voter of a two-node pair, on a third host. It joins through
# a member (its raft port with cluster TLS) and never serves an API.
node_id   = "witness1"
data_dir  = "/var/lib/svcd-witness" # StateDirectory=svcd-witness
raft_addr = "10.0.0.3:7001"
# Mutual TLS between the nodes (docs/ha.md, TLS): required for a raft address
# off loopback unless cluster_tls = "off" says plain TCP on purpose.
tls_ca_file   = "/etc/svcd/tls/ca.pem"
tls_cert_file = "/etc/svcd/tls/witness1.pem"
tls_key_file  = "/etc/svcd/tls/witness1-key.pem"
join      = ["10.0.0.1:7001", "10.0.0.2:7001"] # with cluster TLS: the members' raft addresses (plain: their API)
log_json  = true
log_file  = "/var/log/svcd-witness/witness.log" # LogsDirectory=svcd-witness
log_rotate_bytes     = 16777216
log_rotate_max_files = 5
