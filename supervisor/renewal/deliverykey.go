package renewal

import (
	"strconv"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// RenewalKey is the delivery_key of a job: its id and creation time, both
// kept across recovery, so every redelivery carries the same key; the time
// keeps a job of a fresh store (whose ids start again at job-1) from being
// taken for one a plugin delivered before.
func RenewalKey(j raftstore.RenewalJob) string {
	return bridgeproto.RenewalDeliveryKey(j.ID + "." + strconv.FormatInt(j.CreatedAt.UnixNano(), 36))
}
