package bridge

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// recordsHost is a host whose state holds captured-credential records.
type recordsHost struct {
	nopHost
	records map[string]*raftstore.BrowserRecord
}

func (h recordsHost) state() *raftstore.State {
	s := &raftstore.State{}
	s.Browser.Records = h.records
	return s
}
func (h recordsHost) Read(fn func(*raftstore.State))                 { fn(h.state()) }
func (h recordsHost) ReadVersioned(fn func(*raftstore.State)) uint64 { fn(h.state()); return 0 }

// svcd_bridge_clients counts live clients by the platforms they declared in
// their hello or captured credentials on; a platform the bridge does not
// know is "other", a client with neither is "none", and the label set stays
// the same five values however many clients and odd platforms come.
func TestClientsGaugeByBoundedPlatform(t *testing.T) {
	host := recordsHost{records: map[string]*raftstore.BrowserRecord{
		"k1": {Key: "k1", ClientID: "cap", Platform: bridgeproto.PlatformB, CredentialFingerprint: "f", CredentialsAt: time.Now()},
		"k2": {Key: "k2", ClientID: "odd", Platform: "platform_zz_9", CredentialFingerprint: "f", CredentialsAt: time.Now()},
		"k3": {Key: "k3", ClientID: "gone", Platform: bridgeproto.PlatformC, CredentialFingerprint: "f", CredentialsAt: time.Now()},
	}}
	h := New(Config{PairingToken: "pair"}, host, hclog.NewNullLogger())
	h.Start()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.ServeWS(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	}))
	t.Cleanup(func() { h.Close(); srv.Close() })
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	hello := func(id string, platforms ...string) {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		if err := ws.WriteJSON(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: id, Platforms: platforms}); err != nil {
			t.Fatal(err)
		}
		var head struct {
			Type string `json:"type"`
		}
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := ws.ReadJSON(&head); err != nil || head.Type != bridgeproto.TypeHelloOK {
			t.Fatalf("%s: %v %q", id, err, head.Type)
		}
	}
	hello("both", bridgeproto.PlatformA, bridgeproto.PlatformB)
	hello("a-only", bridgeproto.PlatformA)
	hello("cap")  // platform_b from its captured credentials
	hello("odd")  // captured on a platform the bridge does not know
	hello("bare") // nothing declared, nothing captured

	reg := prometheus.NewRegistry()
	reg.MustRegister(h.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "svcd_bridge_clients" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"platform_a": 2, "platform_b": 2, "platform_c": 0, "other": 1, "none": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("svcd_bridge_clients by platform = %v, want %v", got, want)
	}
}
