package raftstore

import (
	"errors"
	"io"
	"net"
	"testing"
)

// FuzzHandshake feeds arbitrary bytes as the dialer's side of the raft
// handshake: the listener must refuse every one of them (none can know the
// key's MAC over a fresh nonce) and never panic.
func FuzzHandshake(f *testing.F) {
	f.Add([]byte(authMagic))
	f.Add(append([]byte(authMagic), make([]byte, nonceSize+32)...))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		// The fake dialer drains whatever the listener says, sends the fuzz
		// input as its side of the exchange, then hangs up.
		go func() { _, _ = io.Copy(io.Discard, client) }()
		go func() {
			_, _ = client.Write(in)
			client.Close()
		}()
		err := handshake(server, []byte("k"), false)
		server.Close()
		if err == nil {
			t.Fatalf("handshake accepted %q", in)
		}
		_ = errors.Is(err, ErrRaftAuth)
	})
}
