package renewal

import (
	"context"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/workers/scheduler"
)

// BenchmarkPerfS3Tick (issue 24, S3): one renewal tick as the driver runs
// it (recover orphaned jobs, read the view, decide, record the tick: two
// raft writes) over 10,000 auto conversations none of which is due, with
// 5,000 finished jobs, against the same tick over an empty state, alternated
// in one run. The worker's gRPC hop is not in it (the engine runs here).
func BenchmarkPerfS3Tick(b *testing.B) {
	ctx := context.Background()
	driver := func(s raftstoretest.Scale) *Driver {
		n := raftstoretest.Node(b)
		if _, err := raftstoretest.Fill(ctx, n, s); err != nil {
			b.Fatal(err)
		}
		d := benchDriver(n)
		d.tick = scheduler.Engine{}.Tick
		d.settings.IdleAfterMs = time.Hour.Milliseconds() // none due
		return d
	}
	de := driver(raftstoretest.Scale{})
	dl := driver(raftstoretest.Scale{Conversations: 10_000, Auto: 10_000, Jobs: 5_000}.Divided())
	tick := func(d *Driver) func() {
		return func() {
			d.once(ctx)
			if _, last, err := d.Status(); err != "" || last.Projected+last.Dispatched != 0 {
				b.Fatalf("tick: %+v %s", last, err)
			}
		}
	}
	n := max(50, benchfig.Samples(2000)/10)
	for i := 0; i < 10; i++ {
		tick(de)()
		tick(dl)()
	}
	te, tl := benchfig.Alternate(n, tick(de), tick(dl))
	// The tick's own reading, without its two fsync'd writes: the view it
	// hands the worker.
	view := func(d *Driver) func() {
		return func() {
			if v, err := d.View(ctx, time.Now()); err != nil || len(v.Conversations) != 0 {
				b.Fatalf("view: %d conversations, %v", len(v.Conversations), err)
			}
		}
	}
	ve, vl := benchfig.Alternate(n*10, view(de), view(dl))
	benchfig.Report(b, benchfig.Figure{ID: "S3", Name: "renewal tick over 10,000 auto conversations none due vs empty state",
		Goal: "<= 5 ms", Baseline: benchfig.Summarize("empty", te, 0), Subject: benchfig.Summarize("10k auto", tl, 0),
		Extra: map[string]float64{"view_p50_us_large": benchfig.Summarize("", vl, 0).P50us, "view_p50_us_empty": benchfig.Summarize("", ve, 0).P50us},
		Note:  "driver tick in-process: job recover + view + engine + tick record (2 raft writes); no worker gRPC hop; view_*: the view alone"})
}
