package bridge

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/jsoncache"
)

// GET /v1/browser's records are most of its page (about 1 KB each), and
// encoding them again on every read was most of the route's cost at scale
// (issue 24 S2c, third pass). RecordJSON keeps each record's JSON while
// the record reads the Same; the rest of the read model is encoded as
// before.

// recordJSONKept is how many records' encodings are kept per generation:
// the records' bound (2,048) fits in two.
const recordJSONKept = 1024

// RecordJSON keeps records' encodings for ReadModel.AppendJSON.
type RecordJSON = jsoncache.Entries[RecordView]

// NewRecordJSON makes an empty RecordJSON.
func NewRecordJSON() *RecordJSON {
	return jsoncache.New(recordJSONKept, sameRecordView, cloneRecordView)
}

// recordsHead is how a ReadModel whose Records is nil starts: records is
// its first field.
const recordsHead = `{"records":null`

// AppendJSON appends m as api.AppendJSON writes it, each record's JSON
// from kept.
func (m *ReadModel) AppendJSON(dst []byte, kept *RecordJSON) ([]byte, error) {
	if m.Records == nil {
		return api.AppendJSON(dst, m)
	}
	rest := *m
	rest.Records = nil
	tail, err := api.AppendJSON(nil, &rest)
	if err != nil {
		return dst, err
	}
	if !bytes.HasPrefix(tail, []byte(recordsHead)) {
		return dst, fmt.Errorf("read model encodes as %.40q…, not records first", tail)
	}
	// Room for the whole model at once: growing it record by record
	// copied it over and over (a record is about 1 KB).
	dst = slices.Grow(dst, len(tail)+1200*len(m.Records))
	dst = append(dst, `{"records":[`...)
	for i := range m.Records {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = kept.Append(dst, m.Records[i].Key, &m.Records[i]); err != nil {
			return dst, err
		}
	}
	return append(append(dst, ']'), tail[len(recordsHead):]...), nil
}

// sameRecordView compares every field of two records (pointers by what
// they point to, nil and empty apart: they encode apart).
// TestRecordViewSameSeesEveryField fails until a new field is compared.
func sameRecordView(a, b *RecordView) bool {
	return a.Key == b.Key && a.ClientID == b.ClientID && a.Platform == b.Platform && a.Account == b.Account &&
		a.Browser == b.Browser && a.Host == b.Host && a.View == b.View && a.Status == b.Status && a.Connected == b.Connected &&
		a.CredentialFingerprint == b.CredentialFingerprint && sameSlice(a.HeaderNames, b.HeaderNames) &&
		a.HeaderCount == b.HeaderCount && a.CookieCount == b.CookieCount && sameSlice(a.Endpoints, b.Endpoints) &&
		sameEndpointMeta(&a.EndpointMetadata, &b.EndpointMetadata) && sameTimestamps(&a.Timestamps, &b.Timestamps) &&
		sameSlice(a.ShellRuntime, b.ShellRuntime) && sameResult(a.LastActionResult, b.LastActionResult)
}

func sameSlice[S ~[]E, E comparable](a, b S) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

func sameEndpointMeta(a, b *EndpointMetadata) bool {
	return a.Count == b.Count && a.StreamingCount == b.StreamingCount && sameSlice(a.Methods, b.Methods) &&
		sameSlice(a.Kinds, b.Kinds) && a.Host == b.Host && a.CapturedAt == b.CapturedAt
}

func sameTimestamps(a, b *Timestamps) bool {
	return sameTime(a.FirstSeenAt, b.FirstSeenAt) && sameTime(a.UpdatedAt, b.UpdatedAt) && sameTime(a.CredentialsAt, b.CredentialsAt) &&
		sameTime(a.EndpointsAt, b.EndpointsAt) && sameTime(a.LastActivityAt, b.LastActivityAt) && sameTime(a.ConnectedAt, b.ConnectedAt) &&
		sameTime(a.DisconnectedAt, b.DisconnectedAt) && sameTime(a.LastSeenAt, b.LastSeenAt) && sameTime(a.LastStaleSweepAt, b.LastStaleSweepAt)
}

// sameTime: == on time.Time, so the same instant in another location is
// not the Same (it may encode apart).
func sameTime(a, b *time.Time) bool { return a == b || a != nil && b != nil && *a == *b }

func sameResult(a, b *raftstore.StoredActionResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ActionID == b.ActionID && a.Action == b.Action && a.Platform == b.Platform && a.ClientID == b.ClientID &&
		a.Accepted == b.Accepted && a.Completed == b.Completed && a.Failed == b.Failed && a.Reason == b.Reason &&
		sameSlice(a.Target, b.Target) && sameSlice(a.Result, b.Result) && sameSlice(a.ShellRuntime, b.ShellRuntime) && a.At == b.At
}

// cloneRecordView copies v so that it shares nothing with it.
func cloneRecordView(v *RecordView) RecordView {
	c := *v
	c.HeaderNames, c.Endpoints, c.ShellRuntime = slices.Clone(v.HeaderNames), slices.Clone(v.Endpoints), slices.Clone(v.ShellRuntime)
	c.EndpointMetadata.Methods, c.EndpointMetadata.Kinds = slices.Clone(v.EndpointMetadata.Methods), slices.Clone(v.EndpointMetadata.Kinds)
	for _, p := range []**time.Time{&c.Timestamps.FirstSeenAt, &c.Timestamps.UpdatedAt, &c.Timestamps.CredentialsAt, &c.Timestamps.EndpointsAt,
		&c.Timestamps.LastActivityAt, &c.Timestamps.ConnectedAt, &c.Timestamps.DisconnectedAt, &c.Timestamps.LastSeenAt, &c.Timestamps.LastStaleSweepAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	if v.LastActionResult != nil {
		r := *v.LastActionResult
		r.Target, r.Result, r.ShellRuntime = slices.Clone(r.Target), slices.Clone(r.Result), slices.Clone(r.ShellRuntime)
		c.LastActionResult = &r
	}
	return c
}
