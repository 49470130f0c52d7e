package raftstore

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/clustertls"
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

// FuzzTLSServerHandshake plays arbitrary bytes against a TLS-mode raft
// listener: nothing that is not a TLS handshake with a certificate of the
// cluster CA gets a connection, every refusal has a reason, and nothing
// panics.
func FuzzTLSServerHandshake(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, nonceLen))
	f.Add([]byte("\x16\x03\x01\x00\x05hello"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	h := fuzzHolder(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		go func() {
			_, _ = client.Write(in)
			client.Close()
		}()
		s := &authStreamLayer{key: []byte("the cluster key"), tlsHolder: h}
		_, _, err := s.serverHandshake(server)
		server.Close()
		if err == nil {
			t.Fatalf("the TLS listener admitted %q", in)
		}
		found := false
		for _, r := range RefusalReasons {
			found = found || r == reasonOf(err)
		}
		if !found {
			t.Fatalf("reason %q is not a documented label", reasonOf(err))
		}
	})
}

func fuzzHolder(f *testing.F) *clustertls.Holder {
	dir := f.TempDir()
	cp, kp, err := clustertls.CreateCA(dir, "fuzz CA", time.Hour, time.Now())
	if err != nil {
		f.Fatal(err)
	}
	ca, err := clustertls.LoadCA(cp, kp)
	if err != nil {
		f.Fatal(err)
	}
	sans, _ := clustertls.ParseSANs("127.0.0.1")
	c, k, err := ca.CreateCert(dir, "n1", sans, time.Hour, time.Now())
	if err != nil {
		f.Fatal(err)
	}
	h, err := clustertls.Load(clustertls.Files{CA: cp, Cert: c, Key: k})
	if err != nil {
		f.Fatal(err)
	}
	return h
}
