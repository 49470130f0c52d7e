package bridge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// sendNow writes on the caller's goroutine when nothing is queued (issue
// 15). Over a real WebSocket, with the writer goroutine running and
// senders mixing send and sendNow: every frame arrives whole, once, and
// each sender's frames arrive in the order it sent them.
func TestSendNowKeepsEachSendersOrder(t *testing.T) {
	h := New(Config{SendQueue: 4096, KeepaliveInterval: time.Hour}, nil, hclog.NewNullLogger())
	conns := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := newConn(h, ws, "test")
		conns <- c
		c.writeLoop()
	}))
	defer srv.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := <-conns
	defer c.close(websocket.CloseNormalClosure, "")

	const senders, each = 8, 300
	var wg sync.WaitGroup
	defer wg.Wait() // the queue holds every frame: senders never block
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				m := bridgeproto.RequestCancel{Type: bridgeproto.TypeRequestCancel, RequestID: string(rune('a' + g)), Reason: strings.Repeat("x", i%7), Platform: string(rune('0'+i%10)) + "/" + itoa(i)}
				send := c.sendNow
				if i%3 == 0 {
					send = c.send
				}
				if !send(m) {
					t.Errorf("sender %d frame %d refused", g, i)
					return
				}
			}
		}()
	}
	next := map[string]int{}
	_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
	for n := 0; n < senders*each; n++ {
		_, data, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("after %d frames: %v", n, err)
		}
		var m bridgeproto.RequestCancel
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("frame %d is not whole JSON: %v", n, err)
		}
		want := next[m.RequestID]
		if got := m.Platform[strings.IndexByte(m.Platform, '/')+1:]; got != itoa(want) {
			t.Fatalf("sender %s: frame %s arrived when %d was due", m.RequestID, got, want)
		}
		next[m.RequestID] = want + 1
	}
	wg.Wait()
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
