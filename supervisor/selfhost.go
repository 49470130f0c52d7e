package supervisor

import "net"

// selfHost is a Host header the daemon's own guard takes on a request the
// daemon makes to itself (a plugin's instruction blocks run through the
// routes): the listen address, or loopback on its port when the daemon
// listens on every address (0.0.0.0, ::), which the guard does not list as
// a host — blocks sent by a plugin would all fail with a host error.
func selfHost(listen string) string {
	h, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return listen
}
