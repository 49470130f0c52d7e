package raftstore

import (
	"io"
	"net"
	"testing"
)

// FuzzServerHandshake plays an arbitrary client against the raft listener's
// handshake: whatever bytes arrive (short, long, a replayed server proof, an
// HTTP request), a client that does not hold the key is refused and the
// listener never panics. A fresh server nonce per connection means no fixed
// input can carry a valid proof.
func FuzzServerHandshake(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, nonceLen))
	f.Add(make([]byte, nonceLen+32))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		// The fake client drains whatever the listener answers, sends its
		// bytes, then hangs up.
		go func() { _, _ = io.Copy(io.Discard, client) }()
		go func() {
			_, _ = client.Write(in)
			client.Close()
		}()
		s := &authStreamLayer{key: []byte("the cluster key")}
		_, _, err := s.serverHandshake(server)
		server.Close()
		if err == nil {
			t.Fatalf("the listener accepted a client without the key: %q", in)
		}
	})
}
