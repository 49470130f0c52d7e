package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// RequestJoin asks a cluster member's API (leaderURL, e.g.
// http://127.0.0.1:4317) to add this node, retrying until it succeeds or ctx
// ends: the leader may still be starting, or the member asked may be a
// standby (503 not_leader), in which case the leader's API is not known from
// raft alone and the caller should point -join at the leader or retry.
// A join is idempotent on the leader, so retrying is safe.
func RequestJoin(ctx context.Context, leaderURL, token, id, raftAddr string, every time.Duration) error {
	body, _ := json.Marshal(JoinRequest{ID: id, RaftAddr: raftAddr})
	url := strings.TrimRight(leaderURL, "/") + "/v1/cluster/join"
	client := &http.Client{Timeout: 10 * time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode/100 == 4:
				// Refused for good (bad token, bad request): retrying cannot help.
				return fmt.Errorf("join refused by %s: %d %s", leaderURL, resp.StatusCode, bytes.TrimSpace(msg))
			}
			last = fmt.Errorf("join via %s: %d %s", leaderURL, resp.StatusCode, bytes.TrimSpace(msg))
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("join %s: %w (last: %v)", leaderURL, ctx.Err(), last)
		case <-time.After(every):
		}
	}
}
