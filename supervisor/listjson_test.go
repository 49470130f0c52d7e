package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/renewal"
)

// GET /v1/renewal/conversations keeps each conversation's JSON between
// requests (jsoncache). After each of a few hundred random commands that
// change conversations — links with new titles and urls, messages and
// repeats, execution states, automation switches and resumes, client
// loops, renewal jobs run to success or failure, recovery — the route's
// body is byte for byte what api.WriteOK writes for the page's map, read
// from the state at that moment: no entry is ever served from before a
// change, and the answer is the one it was before the entries were kept.
func TestConvListNeverStale(t *testing.T) {
	s, hs := newTestServer(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(24, 2))
	link := func() raftstore.ConvLink {
		id := fmt.Sprintf("conv-%d", rng.IntN(25))
		return raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "c", RemoteID: "r-" + id,
			Title: []string{"", "<b>a & b</b>", "\u2028line", "plain"}[rng.IntN(4)], URL: fmt.Sprintf("https://a.example.test/c/%d", rng.IntN(3))}
	}
	apply := func(typ string, p any) any {
		v, _ := s.node.Apply(ctx, typ, p) // a refused command (a job for a manual conversation) changes nothing
		return v
	}
	for step := 0; step < 400; step++ {
		switch rng.IntN(8) {
		case 0:
			apply(raftstore.CmdConvLink, link())
		case 1:
			apply(raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: link(), MessageID: fmt.Sprintf("m%d", rng.IntN(4))})
		case 2:
			st := []string{raftstore.ExecIdle, raftstore.ExecInstructionRunning, raftstore.ExecRenewalRunning}[rng.IntN(3)]
			apply(raftstore.CmdConvExecution, raftstore.ConvExecution{ConvLink: link(), State: st})
		case 3:
			a := raftstore.ConvAutomation{ConvLink: link(), Status: []string{raftstore.AutoManual, raftstore.AutoAuto, raftstore.AutoPaused}[rng.IntN(3)]}
			if a.Status == raftstore.AutoPaused {
				a.Reason = "held <here>"
			}
			if rng.IntN(4) == 0 {
				a = raftstore.ConvAutomation{ConvLink: a.ConvLink, Resume: true}
			}
			apply(raftstore.CmdConvAutomation, a)
		case 4:
			apply(raftstore.CmdConvClientLoop, raftstore.ConvClientLoop{ConvLink: link(), State: []string{raftstore.LoopRunning, raftstore.LoopStopped}[rng.IntN(2)],
				Reason: "user typing", Rounds: rng.IntN(5), MaxRounds: 5})
		case 5:
			if j, ok := apply(raftstore.CmdJobCreate, raftstore.JobCreate{LocalID: link().LocalID, Message: "go on"}).(raftstore.RenewalJob); ok {
				apply(raftstore.CmdJobStart, raftstore.JobRef{JobID: j.ID})
				apply(raftstore.CmdJobFinish, raftstore.JobFinish{JobID: j.ID, OK: rng.IntN(2) == 0, Error: "no answer", MaxFailures: 3, MaxRenewals: 4, PauseOnLimit: true})
			}
		case 6:
			apply(raftstore.CmdConvRecover, struct{}{})
		default: // only read
		}
		limit := 1 + rng.IntN(30)
		var after *renewal.Cursor
		q := fmt.Sprintf("?limit=%d", limit)
		if rng.IntN(3) == 0 { // a later page
			if _, next, _ := s.convs.Page(1+rng.IntN(10), nil); next != "" {
				c, _ := renewal.ParseCursor(next)
				after, q = &c, q+"&cursor="+url.QueryEscape(next)
			}
		}
		got := authBody(t, hs.URL+"/v1/renewal/conversations"+q)
		page, next, total := s.convs.Page(limit, after)
		want := httptest.NewRecorder()
		out := map[string]any{"conversations": page, "count": len(page), "total": total}
		if next != "" {
			out["next_cursor"] = next
		}
		api.WriteOK(want, out)
		if got != want.Body.String() {
			t.Fatalf("step %d %s:\nroute    %s\nWriteOK  %s", step, q, got, want.Body)
		}
	}
}

func authBody(t *testing.T, u string) string {
	t.Helper()
	code, b := authGet(t, u)
	if code != 200 {
		t.Fatalf("%s: %d %s", u, code, b)
	}
	return string(b)
}

// GET /v1/tasks keeps each summary's JSON the same way: after each of a
// few hundred random task starts, logs and finishes, the route's body
// (any status filter, limit and cursor) is byte for byte what
// api.WriteOK writes for the page's map read at that moment.
func TestTaskListNeverStale(t *testing.T) {
	s, hs := newTestServer(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(24, 5))
	type run struct{ task, run string }
	var open []run
	for step := 0; step < 300; step++ {
		switch rng.IntN(4) {
		case 0:
			id, runID, err := s.tasks.Start(ctx, "instruction_batch", []string{"", "batch <1>", "\u2028"}[rng.IntN(3)], "")
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, run{id, runID})
		case 1:
			if len(open) > 0 {
				r := open[rng.IntN(len(open))]
				s.tasks.Log(ctx, r.task, r.run, "step & more")
			}
		case 2:
			if len(open) > 0 {
				i := rng.IntN(len(open))
				st := []string{raftstore.TaskSucceeded, raftstore.TaskFailed}[rng.IntN(2)]
				s.tasks.Finish(ctx, open[i].task, open[i].run, st, "done")
				open = append(open[:i], open[i+1:]...)
			}
		default: // only read
		}
		limit := 1 + rng.IntN(20)
		status := []string{"", raftstore.TaskRunning, raftstore.TaskSucceeded}[rng.IntN(3)]
		cursor := ""
		if rng.IntN(3) == 0 {
			_, cursor = s.tasks.List(status, 1+rng.IntN(5), "")
		}
		q := fmt.Sprintf("?limit=%d&status=%s", limit, status)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		got := authBody(t, hs.URL+"/v1/tasks"+q)
		list, next := s.tasks.List(status, limit, cursor)
		out := map[string]any{"tasks": list, "count": len(list), "limit": limit}
		if next != "" {
			out["next_cursor"] = next
		}
		want := httptest.NewRecorder()
		api.WriteOK(want, out)
		if got != want.Body.String() {
			t.Fatalf("step %d %s:\nroute    %s\nWriteOK  %s", step, q, got, want.Body)
		}
	}
}
