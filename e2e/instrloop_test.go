package e2e

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/instr"
	"github.com/svcd/svcd/shared/instrloop"
)

// scriptedChat is a fake AI conversation: each injected report is answered
// by the next scripted reply.
type scriptedChat struct {
	mu       sync.Mutex
	replies  []string
	injected []string
	typing   chan struct{}
}

func (c *scriptedChat) NextReply(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replies) == 0 {
		return "", errors.New("script ended")
	}
	r := c.replies[0]
	c.replies = c.replies[1:]
	return r, nil
}

func (c *scriptedChat) Inject(_ context.Context, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injected = append(c.injected, text)
	return nil
}

func (c *scriptedChat) Typing() <-chan struct{} { return c.typing }

// TestInstructionLoopAgainstTheDaemon drives a scripted conversation through
// the client loop with the real daemon executing: a write, a read of what was
// written, then a reply without instructions ends the loop.
func TestInstructionLoopAgainstTheDaemon(t *testing.T) {
	d := instrDaemon(t, t.TempDir())
	path := t.TempDir() + "/loop.txt"
	chat := &scriptedChat{typing: make(chan struct{}), replies: []string{
		"Now read it back:\n" + block("@svc::files/read::"+path),
		"It says hello. Done.",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := "I'll write the file.\n" + block("@svc::files/write::{\"path\":\""+path+"\"}", "hello from the loop")
	res := instrloop.Run(ctx, chat, instrloop.HTTPExecutor{BaseURL: d.URL, Token: d.Token}, instrloop.Config{Delay: 10 * time.Millisecond}, first)
	if res.Stop != instrloop.StopNoInstructions || res.Rounds != 2 || res.Err != nil {
		t.Fatalf("%+v", res)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello from the loop" {
		t.Fatalf("file: %q", b)
	}
	if len(chat.injected) != 2 || !strings.HasPrefix(chat.injected[1], instr.ResultMarker+"\n-- @svc::files/read --\n成功\nhello from the loop") {
		t.Fatalf("injected: %q", chat.injected)
	}

	// Without the token every round fails: three in a row stop the loop with a summary.
	chat = &scriptedChat{typing: make(chan struct{}), replies: []string{first, first, first, first}}
	res = instrloop.Run(ctx, chat, instrloop.HTTPExecutor{BaseURL: d.URL}, instrloop.Config{Delay: 10 * time.Millisecond}, first)
	if res.Stop != instrloop.StopFailures || res.Rounds != 3 || !strings.Contains(chat.injected[len(chat.injected)-1], "3 consecutive rounds failed") {
		t.Fatalf("%+v %q", res, chat.injected)
	}
}
