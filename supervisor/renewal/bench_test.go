package renewal

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/statewrite"
	"github.com/svcd/svcd/workers/scheduler"
)

// The scheduler's figures (issue 10), each against the floor measured in the
// same run — the raft writes the work needs, done directly:
//
//	go test -run='^$' -bench=BenchmarkScheduler -benchtime=3x ./supervisor/renewal/
//
// dispatch: one tick over 1,000 quiet auto conversations projects,
// starts and delivers 1,000 jobs (3 commands each) through the real engine,
// driver and raft node (the plugin answers at once; the worker's gRPC hop is
// not in it). idle: one tick over 10,000 auto conversations none of which
// has been quiet long enough.
func BenchmarkScheduler(b *testing.B) {
	for _, n := range []struct {
		name  string
		convs int
		quiet bool
	}{{"dispatch_1000_auto", 1000, true}, {"idle_10000", 10000, false}} {
		b.Run(n.name+"/baseline_raw_raft_writes", func(b *testing.B) {
			node := raftstoretest.Node(b)
			writes := 1
			if n.quiet {
				writes = 3 * n.convs
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for w := 0; w < writes; w++ {
					if _, err := node.Apply(context.Background(), raftstore.CmdTickRecord, raftstore.TickRecord{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(writes), "writes/op")
		})
		b.Run(n.name+"/tick", func(b *testing.B) {
			var jobs int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				node := raftstoretest.Node(b)
				seed(b, node, n.convs)
				d := benchDriver(node)
				if !n.quiet {
					d.settings.IdleAfterMs = time.Hour.Milliseconds()
				}
				b.StartTimer()
				res, err := scheduler.Engine{}.Tick(context.Background(), d, time.Now(), d.settings)
				if err != nil {
					b.Fatal(err)
				}
				jobs += res.Done
			}
			if n.quiet {
				b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
			}
		})
	}
}

func seed(b *testing.B, n *raftstore.Node, count int) {
	ctx := context.Background()
	for i := 0; i < count; i++ {
		id := fmt.Sprintf("c%d", i)
		link := raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "client", RemoteID: "r" + id}
		if _, err := n.Apply(ctx, raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: link, MessageID: "m"}); err != nil {
			b.Fatal(err)
		}
		if _, err := n.Apply(ctx, raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: link, Status: raftstore.AutoAuto}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDriver(n *raftstore.Node) *Driver {
	store := New(statewrite.Writer{Node: n})
	inject := func(_ context.Context, _ string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
		return &bridgeproto.InjectResult{InjectID: "i", OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}, nil
	}
	// Quiet means: the last reply is older than idle_after (0 ms here; the
	// idle case raises it).
	return NewDriver(store, func() string { return raftstore.ModeRunning }, inject, func(string) bool { return true }, nil,
		scheduler.Settings{IdleAfterMs: 0, Message: "go on", MaxFailures: 3, MaxRenewals: 100}, time.Second, hclog.NewNullLogger())
}
