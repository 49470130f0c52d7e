package renewal

import (
	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// RenewalKey is the delivery_key of a job (bridgeproto.RenewalDeliveryKey).
func RenewalKey(j raftstore.RenewalJob) string {
	return bridgeproto.RenewalDeliveryKey(j.ID, j.CreatedAt)
}
