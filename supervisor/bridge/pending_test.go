package bridge

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// Two callers racing with the same requestId: exactly one may own it. A
// second owner would overwrite the first in the pending map, so the first
// would never see its answer and the plugin would get one id twice.
func TestSendDuplicateRequestIDRace(t *testing.T) {
	h := New(Config{SendQueue: 64}, nil, hclog.NewNullLogger())
	c := newConn(h, nil, "test")
	c.clientID = "c1"
	c.queued.Store(1) // no socket here: every frame queues (sendNow writes only at 0)
	sel := Selection{Conn: c, Target: "platform_b/c1/"}
	for i := 0; i < 2000; i++ {
		id := fmt.Sprintf("dup-%d", i)
		var owners atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := h.Send(sel, bridgeproto.APIRequest{RequestID: id, Platform: bridgeproto.PlatformB, Method: "GET", Path: "/x"}); err == nil {
					owners.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := owners.Load(); n != 1 {
			t.Fatalf("iteration %d: %d callers own requestId %s, want 1", i, n, id)
		}
		for len(c.out) > 0 {
			<-c.out
		}
	}
}
