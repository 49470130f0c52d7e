package instrloop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/instr"
)

// script is a fake conversation: each injected text gets the next scripted
// AI reply; typeAfter makes the user type once that many texts were injected.
type script struct {
	mu        sync.Mutex
	replies   []string
	injected  []string
	typing    chan struct{}
	typeAfter int
}

func newScript(typeAfter int, replies ...string) *script {
	return &script{replies: replies, typing: make(chan struct{}), typeAfter: typeAfter}
}

func (s *script) NextReply(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return "", errors.New("script ended")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, nil
}

func (s *script) Inject(ctx context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injected = append(s.injected, text)
	if s.typeAfter > 0 && len(s.injected) == s.typeAfter {
		close(s.typing)
	}
	return nil
}

func (s *script) Typing() <-chan struct{} { return s.typing }

// realExec executes with the real parser and renderer; an exec of "fail"
// fails, so failure counting is driven by the replies.
var realExec = ExecutorFunc(func(ctx context.Context, reply string) (string, bool, error) {
	var secs []instr.Section
	failed := false
	for _, b := range instr.Parse(reply).Blocks {
		ok := b.Params["command"] != "fail"
		failed = failed || !ok
		secs = append(secs, instr.Section{Label: b.Label, OK: ok, Output: "ran"})
	}
	return instr.Render(secs, instr.ReportLimits{}), failed, nil
})

const okReply = "```instr\n@svc::exec::echo\n```"
const failReply = "```instr\n@svc::exec::fail\n```"

func fast() Config { return Config{Delay: time.Millisecond} }

func TestLoopStopsWhenTheAIIsDone(t *testing.T) {
	s := newScript(0, okReply, "All done, no more instructions.")
	r := Run(context.Background(), s, realExec, fast(), okReply)
	if r.Stop != StopNoInstructions || r.Rounds != 2 || len(s.injected) != 2 {
		t.Fatalf("%+v injected %d", r, len(s.injected))
	}
	for _, in := range s.injected {
		if !strings.HasPrefix(in, instr.ResultMarker+"\n") {
			t.Fatalf("injected text without the marker: %q", in)
		}
	}
}

func TestLoopRoundLimit(t *testing.T) {
	var replies []string
	for i := 0; i < 20; i++ {
		replies = append(replies, okReply)
	}
	s := newScript(0, replies...)
	r := Run(context.Background(), s, realExec, fast(), okReply)
	if r.Stop != StopRoundLimit || r.Rounds != 10 || len(s.injected) != 10 {
		t.Fatalf("default limit: %+v injected %d", r, len(s.injected))
	}
	s = newScript(0, replies...)
	c := fast()
	c.MaxRounds = 4
	if r := Run(context.Background(), s, realExec, c, okReply); r.Stop != StopRoundLimit || r.Rounds != 4 {
		t.Fatalf("configured limit: %+v", r)
	}
}

func TestLoopNeverRunsItsOwnOutput(t *testing.T) {
	s := newScript(0)
	report, _, _ := realExec(context.Background(), okReply)
	r := Run(context.Background(), s, realExec, fast(), report+"\n"+okReply)
	if r.Stop != StopOwnOutput || r.Rounds != 0 || len(s.injected) != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestLoopUserTypingStopsAtOnce(t *testing.T) {
	// The user types right after the first injection: nothing more runs.
	s := newScript(1, okReply, okReply)
	r := Run(context.Background(), s, realExec, fast(), okReply)
	if r.Stop != StopUserTyping || r.Rounds != 1 || len(s.injected) != 1 {
		t.Fatalf("%+v injected %d", r, len(s.injected))
	}
	// Typing during the wait before injecting: the report is not injected.
	s = newScript(0, okReply)
	close(s.typing)
	c := Config{Delay: time.Hour}
	done := make(chan Result, 1)
	go func() { done <- Run(context.Background(), s, realExec, c, okReply) }()
	select {
	case r := <-done:
		if r.Stop != StopUserTyping || len(s.injected) != 0 {
			t.Fatalf("%+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("typing did not stop the 1 h wait")
	}
}

func TestLoopThreeConsecutiveFailuresStopWithSummary(t *testing.T) {
	// fail, ok (resets), fail, fail, fail: stops on the fifth round.
	s := newScript(0, okReply, failReply, failReply, failReply, okReply)
	r := Run(context.Background(), s, realExec, fast(), failReply)
	if r.Stop != StopFailures || r.Rounds != 5 {
		t.Fatalf("%+v", r)
	}
	last := s.injected[len(s.injected)-1]
	if len(s.injected) != 5 || !strings.HasPrefix(last, instr.ResultMarker) || !strings.Contains(last, "3 consecutive rounds failed") || !strings.Contains(last, "round 5: @svc::exec") {
		t.Fatalf("summary:\n%s\n(%d injected)", last, len(s.injected))
	}
}

func TestLoopExecutorErrorsCountAsFailures(t *testing.T) {
	bad := ExecutorFunc(func(context.Context, string) (string, bool, error) { return "", false, errors.New("daemon down") })
	s := newScript(0, okReply, okReply, okReply)
	r := Run(context.Background(), s, bad, fast(), okReply)
	if r.Stop != StopFailures || r.Rounds != 3 || !strings.Contains(s.injected[len(s.injected)-1], "daemon down") {
		t.Fatalf("%+v %q", r, s.injected)
	}
}
