package bridge

import (
	"net"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// A client that cannot drain its queue is dropped with 1013; the daemon
// never blocks on it and never buffers more than the queue.
func TestSlowClientIsDropped(t *testing.T) {
	h := New(Config{SendQueue: 2}, nil, hclog.NewNullLogger())
	c := newConn(h, nil, "test")
	for i := 0; i < 2; i++ {
		if !c.send(bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive}) {
			t.Fatalf("send %d refused with room in the queue", i)
		}
	}
	if c.send(bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive}) {
		t.Fatal("send into a full queue succeeded")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("slow client not closed")
	}
	if c.closeCode != websocket.CloseTryAgainLater {
		t.Fatalf("close code %d, want 1013", c.closeCode)
	}
	if c.send(bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive}) {
		t.Fatal("send after close succeeded")
	}
}

func TestUpgradeGuards(t *testing.T) {
	_, peer, _ := net.ParseCIDR("100.100.1.0/24")
	h := New(Config{AllowedOrigins: []string{"chrome-extension://abc"}, AllowedPeers: []*net.IPNet{peer}}, nil, hclog.NewNullLogger())
	cases := []struct {
		remote, origin, fwd string
		ok                  bool
	}{
		{"127.0.0.1:5000", "", "", true},
		{"[::1]:5000", "chrome-extension://abc", "", true},
		{"100.100.1.7:5000", "", "", true},
		{"100.100.2.7:5000", "", "", false}, // inside CGNAT but not allowed
		{"192.168.1.2:5000", "", "", false},
		{"127.0.0.1:5000", "http://evil.example", "", false},
		{"127.0.0.1:5000", "chrome-extension://other", "", false},
		{"127.0.0.1:5000", "", "1.2.3.4", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/ws/browser", nil)
		r.RemoteAddr = tc.remote
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.fwd != "" {
			r.Header.Set("X-Forwarded-For", tc.fwd)
		}
		if err := h.checkUpgrade(r); (err == nil) != tc.ok {
			t.Errorf("%+v: err %v", tc, err)
		}
	}
}

func TestTokenEqual(t *testing.T) {
	if !tokenEqual("abc", "abc") || tokenEqual("abd", "abc") || tokenEqual("", "") {
		t.Fatal("tokenEqual")
	}
}
