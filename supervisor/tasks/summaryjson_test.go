package tasks

import (
	"testing"

	"github.com/svcd/svcd/shared/jsoncache/jsoncachetest"
)

// Every field of a task summary, through its runs and their logs, takes
// part in sameSummary, and cloneSummary shares nothing with the original.
func TestSummarySameSeesEveryField(t *testing.T) {
	jsoncachetest.SameSeesEveryField(t, sameSummary, cloneSummary)
}
