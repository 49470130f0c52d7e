package bridge

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// refusalLog summarises refused hellos in the log (issue 34 §6): the first
// refusal from a source in an interval is logged as it happens, the rest
// are counted and logged as one summary line per source when the interval
// ends, so a flood of guesses writes a few lines per interval instead of
// one per attempt. Past maxLoggedSources distinct sources in an interval
// (a spray through 127.0.0.0/8), the others share one "other sources" line.
type refusalLog struct {
	log hclog.Logger
	mu  sync.Mutex
	// by counts the refusals not logged yet, per source address.
	by     map[string]*refusalTally
	others refusalTally
}

type refusalTally struct {
	count      int
	lastReason string
}

// maxLoggedSources bounds the lines (and memory) of one interval.
const maxLoggedSources = 32

// RefusalLogInterval is how often the summary lines are written.
const RefusalLogInterval = 10 * time.Second

func newRefusalLog(log hclog.Logger) *refusalLog {
	return &refusalLog{log: log, by: map[string]*refusalTally{}}
}

// note records one refusal of source for reason (never what was sent).
func (r *refusalLog) note(source, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.by[source]; t != nil {
		t.count++
		t.lastReason = reason
		return
	}
	if len(r.by) >= maxLoggedSources {
		r.others.count++
		r.others.lastReason = reason
		return
	}
	r.by[source] = &refusalTally{}
	r.log.Warn("browser client refused at pairing", "remote", source, "reason", reason)
}

// flush writes one summary line per source with refusals not yet logged
// and starts the next interval.
func (r *refusalLog) flush() {
	r.mu.Lock()
	by, others := r.by, r.others
	r.by, r.others = map[string]*refusalTally{}, refusalTally{}
	r.mu.Unlock()
	for source, t := range by {
		if t.count > 0 {
			r.log.Warn("browser clients refused at pairing (summary)", "remote", source, "more", t.count, "last_reason", t.lastReason, "interval", RefusalLogInterval)
		}
	}
	if others.count > 0 {
		r.log.Warn("browser clients refused at pairing (summary)", "remote", "other sources", "more", others.count, "last_reason", others.lastReason, "interval", RefusalLogInterval)
	}
}
