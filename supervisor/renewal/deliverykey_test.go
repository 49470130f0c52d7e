package renewal

import (
	"strings"
	"testing"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/workers/scheduler"
)

// A job recovered after a crash is delivered again with the delivery_key of
// its first delivery; a plugin's duplicate answer finishes it done, marked
// duplicate, and counts as a renewal.
func TestRecoveredJobKeepsItsDeliveryKey(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	job, _ := r.createJob(t, "c1")
	r.startJob(t, job.ID)
	// The crash: the delivery's answer never recorded, the job recovered.
	if n, err := r.store.RecoverJobs(testCtx(t)); err != nil || n != 1 {
		t.Fatalf("recover: %d %v", n, err)
	}
	r.plugin.mu.Lock()
	r.plugin.result = bridgeproto.InjectResult{InjectID: "inj-2", OK: true, Duplicate: true}
	r.plugin.mu.Unlock()
	if res := r.tick(t); res.Dispatched != 1 || res.Done != 1 {
		t.Fatalf("tick: %+v", res)
	}
	calls := r.plugin.calls
	if len(calls) != 1 || calls[0].DeliveryKey != RenewalKey(job) || !strings.HasPrefix(calls[0].DeliveryKey, "renewal:"+job.ID+".") || !bridgeproto.ValidDeliveryKey(calls[0].DeliveryKey) {
		t.Fatalf("delivered with %+v, want the key %s", calls, RenewalKey(job))
	}
	got := r.job(t, job.ID)
	if got.Status != raftstore.JobDone || !got.Duplicate || got.DeliveryAck != nil || RenewalKey(got) != calls[0].DeliveryKey {
		t.Fatalf("job after a duplicate answer: %+v", got)
	}
	if c := r.conv(t, "c1"); c.RepeatedRenewalCount != 1 || c.ConsecutiveFailureCount != 0 {
		t.Fatalf("conversation: %+v", c)
	}
}
