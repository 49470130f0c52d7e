package bridge

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/jsoncache"
)

// GET /v1/browser's page is its records (about 1 KB each), clients,
// automation conversations and policy.targets, and encoding them again on
// every read was most of the route's cost at scale (issue 24 S2c, third
// pass). ReadModelJSON keeps each entry's JSON while the entry reads the
// Same (jsoncache); the page is put together around the kept bytes, the
// other fields encoded as before.

// How many entries of each list are kept per generation: the records'
// bound (2,048) and the clients' fit in two.
const (
	recordJSONKept = 1024
	entryJSONKept  = 512
)

// ReadModelJSON keeps the read model's entries' encodings for
// ReadModel.AppendJSON.
type ReadModelJSON struct {
	records *jsoncache.Entries[RecordView]
	clients *jsoncache.Entries[ClientView]
	autos   *jsoncache.Entries[bridgeproto.AutomationConversation]
	targets *jsoncache.Entries[TargetDiag]
}

// NewReadModelJSON keeps nothing yet.
func NewReadModelJSON() *ReadModelJSON {
	return &ReadModelJSON{
		records: jsoncache.New(recordJSONKept, sameRecordView, cloneRecordView),
		clients: jsoncache.New(entryJSONKept, sameClientView, cloneClientView),
		autos: jsoncache.New(entryJSONKept, func(a, b *bridgeproto.AutomationConversation) bool { return *a == *b },
			func(v *bridgeproto.AutomationConversation) bridgeproto.AutomationConversation { return *v }),
		targets: jsoncache.New(entryJSONKept, sameTargetDiag, cloneTargetDiag),
	}
}

// targetsNull is how Policy ends when its Targets (its last field) is nil.
const targetsNull = `"targets":null}`

// AppendJSON appends m as api.AppendJSON writes it: ReadModel's fields in
// their order (TestReadModelJSONIsEncodingJSON holds it to that), each
// entry of records, clients, automation_conversations and
// policy.targets from kept.
func (m *ReadModel) AppendJSON(dst []byte, kept *ReadModelJSON) ([]byte, error) {
	if m.Records == nil || m.Clients == nil || m.AutomationConversations == nil || m.Policy.Targets == nil {
		return api.AppendJSON(dst, m) // a null list: as encoding/json writes it
	}
	policy := m.Policy
	policy.Targets = nil
	pol, err := api.AppendJSON(nil, &policy)
	if err != nil {
		return dst, err
	}
	if !bytes.HasSuffix(pol, []byte(targetsNull)) {
		return dst, fmt.Errorf("policy encodes as …%.40q, not targets last", pol[max(0, len(pol)-40):])
	}
	// Room for the whole page at once: growing it entry by entry copied it
	// over and over.
	dst = slices.Grow(dst, 1024+len(pol)+1200*len(m.Records)+600*len(m.Clients)+200*len(m.AutomationConversations)+400*len(m.Policy.Targets))
	w := fieldWriter{dst: dst}
	list(&w, `{"records":`, kept.records, m.Records, func(v *RecordView) string { return v.Key })
	list(&w, `,"clients":`, kept.clients, m.Clients, func(v *ClientView) string { return v.ClientID })
	w.value(`,"shell_runtime":`, m.ShellRuntime)
	w.value(`,"last_action_result":`, m.LastActionResult)
	list(&w, `,"automation_conversations":`, kept.autos, m.AutomationConversations,
		func(v *bridgeproto.AutomationConversation) string { return v.LocalConversationID })
	w.dst = append(append(w.dst, `,"policy":`...), pol[:len(pol)-len(targetsNull)]...)
	w.targets(kept.targets, m.Policy.Targets)
	w.dst = append(w.dst, '}')
	w.value(`,"summary":`, m.Summary)
	w.value(`,"pairing":`, m.Pairing)
	w.value(`,"generated_at":`, m.GeneratedAt)
	if m.NextCursor != "" {
		w.value(`,"next_cursor":`, m.NextCursor)
	}
	w.dst = append(w.dst, '}')
	return w.dst, w.err
}

// fieldWriter appends a JSON object's fields, keeping the first error.
type fieldWriter struct {
	dst []byte
	err error
}

func (w *fieldWriter) value(name string, v any) {
	if w.err == nil {
		w.dst, w.err = api.AppendJSON(append(w.dst, name...), v)
	}
}

func list[V any](w *fieldWriter, name string, kept *jsoncache.Entries[V], vs []V, key func(*V) string) {
	if w.err == nil {
		w.dst, w.err = kept.AppendList(append(w.dst, name...), vs, key)
	}
}

// targets writes policy.targets as encoding/json writes a map: its keys
// sorted.
func (w *fieldWriter) targets(kept *jsoncache.Entries[TargetDiag], m map[string]TargetDiag) {
	w.dst = append(w.dst, `"targets":{`...)
	for i, key := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			w.dst = append(w.dst, ',')
		}
		w.value("", key)
		w.dst = append(w.dst, ':')
		if w.err == nil {
			d := m[key]
			w.dst, w.err = kept.Append(w.dst, key, &d)
		}
	}
	w.dst = append(w.dst, '}')
}

// sameRecordView compares every field of two records (pointers by what
// they point to, nil and empty apart: they encode apart).
// TestReadModelEntriesSameSeeEveryField fails until a new field is compared.
func sameRecordView(a, b *RecordView) bool {
	return a.Key == b.Key && a.ClientID == b.ClientID && a.Platform == b.Platform && a.Account == b.Account &&
		a.Browser == b.Browser && a.Host == b.Host && a.View == b.View && a.Status == b.Status && a.Connected == b.Connected &&
		a.CredentialFingerprint == b.CredentialFingerprint && jsoncache.SameSlice(a.HeaderNames, b.HeaderNames) &&
		a.HeaderCount == b.HeaderCount && a.CookieCount == b.CookieCount && jsoncache.SameSlice(a.Endpoints, b.Endpoints) &&
		sameEndpointMeta(&a.EndpointMetadata, &b.EndpointMetadata) && sameTimestamps(&a.Timestamps, &b.Timestamps) &&
		jsoncache.SameSlice(a.ShellRuntime, b.ShellRuntime) && sameResult(a.LastActionResult, b.LastActionResult)
}

func sameEndpointMeta(a, b *EndpointMetadata) bool {
	return a.Count == b.Count && a.StreamingCount == b.StreamingCount && jsoncache.SameSlice(a.Methods, b.Methods) &&
		jsoncache.SameSlice(a.Kinds, b.Kinds) && a.Host == b.Host && a.CapturedAt == b.CapturedAt
}

func sameTimestamps(a, b *Timestamps) bool {
	return jsoncache.SameTime(a.FirstSeenAt, b.FirstSeenAt) && jsoncache.SameTime(a.UpdatedAt, b.UpdatedAt) && jsoncache.SameTime(a.CredentialsAt, b.CredentialsAt) &&
		jsoncache.SameTime(a.EndpointsAt, b.EndpointsAt) && jsoncache.SameTime(a.LastActivityAt, b.LastActivityAt) && jsoncache.SameTime(a.ConnectedAt, b.ConnectedAt) &&
		jsoncache.SameTime(a.DisconnectedAt, b.DisconnectedAt) && jsoncache.SameTime(a.LastSeenAt, b.LastSeenAt) && jsoncache.SameTime(a.LastStaleSweepAt, b.LastStaleSweepAt)
}

func sameResult(a, b *raftstore.StoredActionResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ActionID == b.ActionID && a.Action == b.Action && a.Platform == b.Platform && a.ClientID == b.ClientID &&
		a.Accepted == b.Accepted && a.Completed == b.Completed && a.Failed == b.Failed && a.Reason == b.Reason &&
		jsoncache.SameSlice(a.Target, b.Target) && jsoncache.SameSlice(a.Result, b.Result) && jsoncache.SameSlice(a.ShellRuntime, b.ShellRuntime) && a.At == b.At
}

// cloneRecordView copies v so that it shares nothing with it.
func cloneRecordView(v *RecordView) RecordView {
	c := *v
	c.HeaderNames, c.Endpoints, c.ShellRuntime = slices.Clone(v.HeaderNames), slices.Clone(v.Endpoints), slices.Clone(v.ShellRuntime)
	c.EndpointMetadata.Methods, c.EndpointMetadata.Kinds = slices.Clone(v.EndpointMetadata.Methods), slices.Clone(v.EndpointMetadata.Kinds)
	for _, p := range []**time.Time{&c.Timestamps.FirstSeenAt, &c.Timestamps.UpdatedAt, &c.Timestamps.CredentialsAt, &c.Timestamps.EndpointsAt,
		&c.Timestamps.LastActivityAt, &c.Timestamps.ConnectedAt, &c.Timestamps.DisconnectedAt, &c.Timestamps.LastSeenAt, &c.Timestamps.LastStaleSweepAt} {
		*p = jsoncache.CloneTime(*p)
	}
	c.LastActionResult = cloneResult(v.LastActionResult)
	return c
}

// sameClientView compares every field of two clients, like sameRecordView.
func sameClientView(a, b *ClientView) bool {
	return a.ClientID == b.ClientID && a.Browser == b.Browser && a.ExtensionVersion == b.ExtensionVersion &&
		a.Connected == b.Connected && a.Remote == b.Remote && jsoncache.SameTime(a.LastConnectedAt, b.LastConnectedAt) &&
		jsoncache.SameTime(a.LastDisconnectedAt, b.LastDisconnectedAt) && jsoncache.SameTime(a.LastSeenAt, b.LastSeenAt) &&
		jsoncache.SameSlice(a.ShellRuntime, b.ShellRuntime) && sameResult(a.LastActionResult, b.LastActionResult) &&
		a.Paired == b.Paired && a.Auth == b.Auth && jsoncache.SameSlice(a.Scopes, b.Scopes)
}

func cloneClientView(v *ClientView) ClientView {
	c := *v
	c.LastConnectedAt, c.LastDisconnectedAt, c.LastSeenAt = jsoncache.CloneTime(v.LastConnectedAt), jsoncache.CloneTime(v.LastDisconnectedAt), jsoncache.CloneTime(v.LastSeenAt)
	c.ShellRuntime, c.Scopes = slices.Clone(v.ShellRuntime), slices.Clone(v.Scopes)
	c.LastActionResult = cloneResult(v.LastActionResult)
	return c
}

// sameTargetDiag compares every field of two targets' diagnostics.
func sameTargetDiag(a, b *TargetDiag) bool {
	return a.Platform == b.Platform && a.ClientID == b.ClientID && a.Account == b.Account && a.Status == b.Status &&
		jsoncache.SameTime(a.LastActivityAt, b.LastActivityAt) && a.LastActivityKind == b.LastActivityKind &&
		a.StaleSweepCount == b.StaleSweepCount && jsoncache.SameTime(a.LastStaleSweepAt, b.LastStaleSweepAt) &&
		a.LastStaleSweepStatus == b.LastStaleSweepStatus &&
		(a.Relay == nil) == (b.Relay == nil) && (a.Relay == nil || *a.Relay == *b.Relay) &&
		a.InFlight == b.InFlight && a.Waiting == b.Waiting
}

func cloneTargetDiag(v *TargetDiag) TargetDiag {
	c := *v
	c.LastActivityAt, c.LastStaleSweepAt = jsoncache.CloneTime(v.LastActivityAt), jsoncache.CloneTime(v.LastStaleSweepAt)
	if v.Relay != nil {
		r := *v.Relay
		c.Relay = &r
	}
	return c
}

func cloneResult(r *raftstore.StoredActionResult) *raftstore.StoredActionResult {
	if r == nil {
		return nil
	}
	c := *r
	c.Target, c.Result, c.ShellRuntime = slices.Clone(r.Target), slices.Clone(r.Result), slices.Clone(r.ShellRuntime)
	return &c
}
