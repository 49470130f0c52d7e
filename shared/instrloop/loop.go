// Package instrloop is the client loop that drives a conversation with
// instruction blocks: it executes each AI reply's ```instr blocks and injects
// the report back, under SPEC.md's loop protection (at most 10 rounds, a
// 2-second wait before injecting, the result marker so it never executes its
// own output, user typing stops it at once, three consecutive failures stop
// it with an error summary). The browser extension implements the same rules
// in JavaScript; docs/instructions.md describes them for both.
package instrloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/instr"
)

// Conversation is the chat the loop drives.
type Conversation interface {
	// NextReply waits for the next final AI reply.
	NextReply(ctx context.Context) (string, error)
	// Inject types text into the input box and sends it.
	Inject(ctx context.Context, text string) error
	// Typing fires when the user types; the loop stops at once.
	Typing() <-chan struct{}
}

// Executor runs one reply's instructions and returns the report. failed
// says at least one instruction failed.
type Executor interface {
	Execute(ctx context.Context, reply string) (report string, failed bool, err error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, reply string) (string, bool, error)

func (f ExecutorFunc) Execute(ctx context.Context, reply string) (string, bool, error) {
	return f(ctx, reply)
}

// Config tunes the loop; zero values are SPEC.md's defaults.
type Config struct {
	MaxRounds   int           // default 10
	Delay       time.Duration // wait after each round before injecting; default 2 s
	MaxFailures int           // consecutive failed rounds that stop the loop; default 3
}

func (c Config) withDefaults() Config {
	if c.MaxRounds <= 0 {
		c.MaxRounds = 10
	}
	if c.Delay <= 0 {
		c.Delay = 2 * time.Second
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = 3
	}
	return c
}

// Why the loop stopped.
const (
	StopNoInstructions = "no_instructions" // the reply held no instruction: the AI is done
	StopOwnOutput      = "own_output"      // the reply carries the result marker
	StopRoundLimit     = "round_limit"
	StopUserTyping     = "user_typing"
	StopFailures       = "consecutive_failures"
	StopContext        = "context_done"
)

// Result says how a loop ended.
type Result struct {
	Rounds   int    // rounds executed
	Injected int    // texts injected (reports and the failure summary)
	Stop     string // one of the Stop* reasons
	Err      error  // the last executor or conversation error, if any
}

// Run drives conv starting from reply (the final AI reply that started it).
func Run(ctx context.Context, conv Conversation, exec Executor, cfg Config, reply string) Result {
	cfg = cfg.withDefaults()
	var res Result
	failures := 0
	var failNotes []string
	for {
		if typed(conv) {
			res.Stop = StopUserTyping
			return res
		}
		if instr.IsReport(reply) {
			res.Stop = StopOwnOutput
			return res
		}
		p := instr.Parse(reply)
		if len(p.Blocks) == 0 && len(p.Refused) == 0 {
			res.Stop = StopNoInstructions
			return res
		}
		if res.Rounds >= cfg.MaxRounds {
			res.Stop = StopRoundLimit
			return res
		}
		res.Rounds++
		report, failed, err := exec.Execute(ctx, reply)
		if err != nil {
			res.Err, failed = err, true
			report = instr.Render([]instr.Section{{Label: "svcd", OK: false, Output: err.Error()}}, instr.ReportLimits{})
		}
		if failed {
			failures++
			failNotes = append(failNotes, fmt.Sprintf("round %d: %s", res.Rounds, firstFailure(report, err)))
		} else {
			failures, failNotes = 0, nil
		}
		if failures >= cfg.MaxFailures {
			summary := instr.ResultMarker + "\n-- loop stopped --\n" + instr.Failed + "\n" +
				fmt.Sprintf("%d consecutive rounds failed; automatic execution stopped until the user writes again.\n", failures) +
				strings.Join(failNotes, "\n") + "\n"
			if stop := wait(ctx, conv, cfg.Delay); stop != "" {
				res.Stop = stop
				return res
			}
			if err := conv.Inject(ctx, summary); err != nil {
				res.Err = err
			} else {
				res.Injected++
			}
			res.Stop = StopFailures
			return res
		}
		if stop := wait(ctx, conv, cfg.Delay); stop != "" {
			res.Stop = stop
			return res
		}
		if err := conv.Inject(ctx, report); err != nil {
			res.Err, res.Stop = err, StopContext
			return res
		}
		res.Injected++
		next, err := nextReply(ctx, conv)
		if err != nil {
			res.Err = err
			res.Stop = StopContext
			if errors.Is(err, errTyping) {
				res.Err, res.Stop = nil, StopUserTyping
			}
			return res
		}
		reply = next
	}
}

var errTyping = errors.New("user typing")

// typed reports a pending typing signal without blocking.
func typed(conv Conversation) bool {
	select {
	case <-conv.Typing():
		return true
	default:
		return false
	}
}

// wait sleeps d unless the user types or ctx ends first.
func wait(ctx context.Context, conv Conversation, d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ""
	case <-conv.Typing():
		return StopUserTyping
	case <-ctx.Done():
		return StopContext
	}
}

// nextReply waits for the next reply; typing meanwhile stops the wait.
func nextReply(ctx context.Context, conv Conversation) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		text string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		t, err := conv.NextReply(ctx)
		ch <- answer{t, err}
	}()
	select {
	case a := <-ch:
		return a.text, a.err
	case <-conv.Typing():
		return "", errTyping
	}
}

// firstFailure picks the first failed section's first line for the summary.
func firstFailure(report string, err error) string {
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(report, "\n")
	for i, l := range lines {
		if l == instr.Failed && i > 0 {
			msg := ""
			if i+1 < len(lines) {
				msg = lines[i+1]
			}
			return strings.Trim(lines[i-1], "- ") + ": " + msg
		}
	}
	return "failed"
}
