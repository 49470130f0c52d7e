package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/svcd/svcd/supervisor/config"
)

// exposureWarning is the one warning for a listener other hosts can reach
// (empty when it is loopback only): what becomes reachable, and what still
// guards it, so -listen 0.0.0.0:… never starts without a word.
func exposureWarning(bound net.Addr, cfg config.Config) string {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return ""
	}
	hosts := "localhost, 127.0.0.1, ::1 and the -listen host"
	if len(cfg.AllowedHosts) > 0 {
		hosts += ", plus allowed_hosts " + strings.Join(cfg.AllowedHosts, ",")
	} else {
		hosts += " (set allowed_hosts / -allowed-hosts / SVC_ALLOWED_HOSTS for the names remote clients use)"
	}
	return fmt.Sprintf("listening on %s, which is not loopback: the API (exec and files included), the status panel and the browser bridge are reachable from other hosts. "+
		"Still guarded by: the Host allow-list (%s); the shared token (require_token=%s); the cross-site write guard (Origin and Sec-Fetch-Site on every state-changing request). "+
		"Traffic is plain HTTP; use -listen 127.0.0.1:PORT to stay local",
		tcp.String(), hosts, cfg.RequireToken)
}
