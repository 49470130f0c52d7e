package relayhttp

import (
	"errors"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/workers/relay"
)

// streamRelay answers as SSE. Statuses known before the stream (no client,
// refused) were JSON errors already; from here on failures are stream_error.
//
// The steps: startStream writes the headers; each turn of the loop flushes
// what the last turn left unflushed (or finds the caller gone), takes the
// next frame (the first one possibly already waited for with the headers)
// and writes it (stream.handle). Once the stream is open, lone events are
// written by the sink on the connection's reader instead (stream.sink).
func (x *Relay) streamRelay(w http.ResponseWriter, r *http.Request, p *bridge.Pending, timeout time.Duration, res *bridge.RelayResult, out *relay.Outcome) error {
	st := x.startStream(w, p, res, out)
	first := firstFrame(r.Context(), p, st.sse)
	defer func() { p.Lock(); p.ClearSink(); p.Unlock() }()
	for {
		if st.callerGone() {
			res.Error = "caller_gone"
			return nil
		}
		m, err := first, error(nil)
		if first != nil {
			first = nil
		} else {
			m, err = x.waitFrame(r.Context(), p, timeout)
		}
		if err != nil {
			p.Lock() // the sink may be writing; held while the error event is written
			p.ClearSink()
			defer p.Unlock()
			return st.waitFailed(err)
		}
		done, werr := st.write(m)
		if done {
			return nil
		}
		if werr != nil {
			// The caller's connection broke mid-stream.
			x.Hub.CancelRemote(p, "caller_gone")
			return nil
		}
	}
}

// stream is one SSE answer in progress. Everything that writes to the
// caller holds p's lock (p.Write, p.Lock), the sink included, so its fields
// are guarded by that lock.
type stream struct {
	hub *bridge.Hub
	p   *bridge.Pending
	sse sseWriter
	res *bridge.RelayResult
	out *relay.Outcome
	// Frames that already arrived go out in one flush: each write flushes
	// only when no further frame is waiting, and the loop flushes before
	// it waits for more (unflushed). stream_end is not flushed at all: the
	// server writes it with the end of the chunked body in one go.
	unflushed bool
	more      bool // the caller knows more follows at once
	seq       int64
	opened    bool
	broken    bool // the sink's write to the caller failed
	sinkFn    func(*bridgeproto.StreamEvent)
}

// startStream writes the SSE status and headers (not yet flushed: see
// firstFrame) and returns the stream that writes the rest.
func (x *Relay) startStream(w http.ResponseWriter, p *bridge.Pending, res *bridge.RelayResult, out *relay.Outcome) *stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Relay-Request-Id", res.RequestID)
	w.WriteHeader(http.StatusOK)
	st := &stream{hub: x.Hub, p: p, sse: sseWriter{w: w, rc: http.NewResponseController(w)}, res: res, out: out}
	st.sinkFn = st.sink
	return st
}

// callerGone flushes what the last frames left unflushed once nothing more
// waits in p.C, and reports whether the caller is gone (the sink's write or
// this flush failed); the plugin is told to stop then.
func (st *stream) callerGone() bool {
	st.p.Lock()
	sinkFailed := st.broken
	gone := sinkFailed
	if !gone && st.unflushed && len(st.p.C) == 0 {
		st.unflushed = false
		gone = st.sse.rc.Flush() != nil
	}
	st.p.Unlock()
	if gone && !sinkFailed { // else the sink has cancelled already
		st.hub.CancelRemote(st.p, "caller_gone")
	}
	return gone
}

// waitFailed ends the stream for a wait that gave no frame: quietly when
// the caller is gone, else with a stream_error. The caller holds p's lock.
func (st *stream) waitFailed(err error) error {
	if st.broken || errors.Is(err, errCallerGone) {
		st.res.Error = "caller_gone"
		return nil
	}
	ae := api.AsError(err)
	if ae.Code != "request_cancelled" {
		st.out.Cancelled, st.out.Status = false, 0
	}
	return st.fail(ae.Code, ae.Message)
}

// write writes one frame taken from p.C under p's lock; done: the stream
// is over (and the sink is cleared: nothing may follow stream_end).
func (st *stream) write(m bridgeproto.Message) (done bool, werr error) {
	st.p.Write(func() {
		if done, werr = st.handle(m); done {
			st.p.ClearSink()
		}
	})
	return done, werr
}

// handle writes one frame; done: the stream is over.
func (st *stream) handle(m bridgeproto.Message) (done bool, werr error) {
	switch v := m.(type) {
	case *bridgeproto.StreamOpen:
		werr = st.open(v.Status, v.Headers)
	case *bridgeproto.StreamEvent:
		if werr = st.open(http.StatusOK, nil); werr == nil {
			werr = st.emit(v.Event, v.Data)
		}
	case *bridgeproto.StreamEnd:
		if werr = st.open(http.StatusOK, nil); werr == nil {
			st.end()
		}
		return true, nil
	case *bridgeproto.StreamError:
		st.out.Cancelled, st.out.Status = false, 0
		return true, st.fail(orDefault(v.Code, "relay_failed"), api.Clip(v.Message))
	case *bridgeproto.APIResponse:
		// A page that answered in one piece: open, one event, end,
		// written together.
		if v.Error != "" {
			st.out.Cancelled, st.out.Status = false, 0
			return true, st.fail("relay_failed", api.Clip(v.Error))
		}
		st.more = true
		if werr = st.open(v.Status, v.Headers); werr == nil {
			if werr = st.emit("", v.Body); werr == nil {
				st.end()
			}
		}
		return true, nil
	}
	return false, werr
}

// open writes stream_open once, with the platform's status and safe
// headers, and from then on lets the sink write lone events.
func (st *stream) open(status int, headers map[string]string) error {
	if st.opened {
		return nil
	}
	st.opened = true
	st.res.Status, st.res.Headers = status, bridgeproto.SafeHeaders(headers)
	st.out.Cancelled, st.out.Status, st.out.RetryAfterMs = false, status, retryAfterMs(headers)
	if err := st.put(bridgeproto.TypeStreamOpen, st.with("status", status, "headers", st.res.Headers)); err != nil {
		return err
	}
	st.p.SetSink(st.sinkFn)
	return nil
}

// sink writes an event that arrives alone, on the connection's reader
// (issue 15, fourth pass) instead of waking the stream's goroutine for it;
// bursts still come through p.C and go out with one flush. A caller that
// stopped reading must not hold the reader longer than a full consumer may
// (bridge.DeliverWait): past that the write fails and the caller loses its
// stream, instead of every frame of the plugin waiting behind it.
func (st *stream) sink(ev *bridgeproto.StreamEvent) {
	if st.broken {
		return
	}
	_ = st.sse.rc.SetWriteDeadline(time.Now().Add(bridge.DeliverWait))
	err := st.emit(ev.Event, ev.Data)
	_ = st.sse.rc.SetWriteDeadline(time.Time{})
	if err != nil {
		st.broken = true
		st.hub.CancelRemote(st.p, "caller_gone")
	}
}

// emit writes the next stream_event.
func (st *stream) emit(event, data string) error {
	st.seq++
	st.res.Events = st.seq
	res := st.res
	return st.put(bridgeproto.TypeStreamEvent, sseStreamEvent{ClientID: res.ClientID, Data: data, Event: event, Platform: res.Platform, RequestID: res.RequestID, Seq: st.seq})
}

// put writes one event, flushed unless more is known to follow at once.
func (st *stream) put(name string, data any) error {
	if st.more || len(st.p.C) > 0 {
		st.unflushed = true
		return st.sse.write(name, data)
	}
	st.unflushed = false
	return st.sse.event(name, data)
}

func (st *stream) end() { _ = st.sse.write(bridgeproto.TypeStreamEnd, st.with("events", st.seq)) }

// fail writes stream_error: the answer's status was sent long ago.
func (st *stream) fail(code, msg string) error {
	st.res.Error = code
	_ = st.sse.event(bridgeproto.TypeStreamError, st.with("code", code, "message", msg, "events", st.seq))
	return nil
}

// with is an event's data: the request's identity and kv.
func (st *stream) with(kv ...any) map[string]any {
	m := map[string]any{"requestId": st.res.RequestID, "platform": st.res.Platform, "clientId": st.res.ClientID}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}
