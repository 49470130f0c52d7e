package relayhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
)

// waitFrame waits for the next frame of p, the caller going away, p ending
// or the timeout. Exactly one of the results is set. For a stream whose
// events also go straight to the caller (Pending.SetSink), the timeout
// counts from the later of the call and the last event the sink took.
func (x *Relay) waitFrame(ctx context.Context, p *bridge.Pending, timeout time.Duration) (bridgeproto.Message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m := <-p.C:
			return m, nil
		case <-ctx.Done():
			x.Hub.CancelRemote(p, "caller_gone")
			return nil, errCallerGone
		case <-p.Done():
			code, msg := p.Err()
			switch code {
			case "cancelled":
				return nil, api.Conflict("request_cancelled", "request %s was cancelled (%s)", p.ID, msg)
			case "client_disconnected":
				return nil, api.NewError(http.StatusBadGateway, "client_disconnected", "%s", msg)
			}
			return nil, api.NewError(http.StatusBadGateway, code, "%s", msg)
		case <-timer.C:
			if left := time.Until(p.LastDirect().Add(timeout)); left > 0 {
				timer.Reset(left)
				continue
			}
			x.Hub.CancelRemote(p, "timeout")
			return nil, api.NewError(http.StatusGatewayTimeout, "relay_timeout", "the browser client did not answer within %d ms", timeout.Milliseconds())
		}
	}
}

var errCallerGone = errors.New("caller went away")

func orGone(err error) error {
	if errors.Is(err, errCallerGone) {
		return api.NewError(499, "caller_gone", "caller went away")
	}
	return err
}

// retryAfterMs reads a Retry-After header (seconds or an HTTP date).
func retryAfterMs(h map[string]string) int64 {
	v := ""
	for k, val := range h {
		if strings.EqualFold(k, "Retry-After") {
			v = strings.TrimSpace(val)
		}
	}
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return n * 1000
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Milliseconds()
		}
	}
	return 0
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
