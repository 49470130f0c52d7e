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

// pairingWSHost is the host:port a browser should dial for the bridge, as
// printed with a pairing code: the listen address, or — when the daemon
// listens on every address — the Host the caller reached it by (it passed
// the guard's host check), since ws://0.0.0.0 names no machine.
func pairingWSHost(listen, requestHost string) string {
	h, _, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(h); (h == "" || (ip != nil && ip.IsUnspecified())) && requestHost != "" {
		return requestHost
	}
	return listen
}
