package tasks

import (
	"slices"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/jsoncache"
)

// GET /v1/tasks encodes up to 1,000 summaries per page, most of them
// finished and never changing again; SummaryJSON keeps each one's JSON
// while the summary reads the Same (jsoncache).

// SummaryJSON keeps task summaries' encodings.
type SummaryJSON = jsoncache.Entries[Summary]

// summaryJSONKept per generation: a few default pages (50) and one of
// the largest (1,000).
const summaryJSONKept = 1024

// NewSummaryJSON keeps nothing yet.
func NewSummaryJSON() *SummaryJSON { return jsoncache.New(summaryJSONKept, sameSummary, cloneSummary) }

// sameSummary compares every field of two summaries, their task's runs
// and logs included (TestSummarySameSeesEveryField fails until a new
// field is compared).
func sameSummary(a, b *Summary) bool {
	x, y := &a.Task, &b.Task
	return x.ID == y.ID && x.Kind == y.Kind && x.Title == y.Title && x.Status == y.Status && x.Source == y.Source &&
		x.Conversation == y.Conversation && x.Summary == y.Summary && x.ErrorCode == y.ErrorCode && x.Runner == y.Runner &&
		x.CreatedAt == y.CreatedAt && x.UpdatedAt == y.UpdatedAt && jsoncache.SameTime(x.FinishedAt, y.FinishedAt) &&
		(x.Runs == nil) == (y.Runs == nil) && slices.EqualFunc(x.Runs, y.Runs, sameRun) && jsoncache.SameSlice(a.RunIDs, b.RunIDs)
}

func sameRun(a, b raftstore.TaskRun) bool {
	return a.RunID == b.RunID && a.Status == b.Status && a.StartedAt == b.StartedAt && jsoncache.SameTime(a.FinishedAt, b.FinishedAt) &&
		jsoncache.SameSlice(a.Logs, b.Logs) && a.Dropped == b.Dropped && a.Interrupted == b.Interrupted
}

func cloneSummary(v *Summary) Summary {
	c := *v
	c.FinishedAt, c.RunIDs = jsoncache.CloneTime(v.FinishedAt), slices.Clone(v.RunIDs)
	if v.Runs != nil {
		c.Runs = make([]raftstore.TaskRun, len(v.Runs))
		for i, r := range v.Runs {
			r.FinishedAt, r.Logs = jsoncache.CloneTime(r.FinishedAt), slices.Clone(r.Logs)
			c.Runs[i] = r
		}
	}
	return c
}
