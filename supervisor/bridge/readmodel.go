package bridge

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/keyrange"
)

// Views of a record (SPEC.md records[].view).
const (
	ViewActiveAndPersisted = "active_and_persisted"
	ViewActiveOnly         = "active_only"
	ViewPersistedOnly      = "persisted_only"
)

// Filter narrows GET /v1/browser. Empty fields match everything.
type Filter struct {
	Platform, Account, Browser, ClientID, Host, Status string
}

// RelaySource gives the relay engine's part of one page: asked once, after
// the page's records are chosen, for the targets whose keys fall in the
// page's range of record keys (keys). It may give more targets than asked
// for: the read model keeps those of the range.
type RelaySource func(keys keyrange.Range) RelayInfo

// RelayInfo is what the relay engine adds to the read model: its defaults
// and the in-process counters of each target (never persisted).
type RelayInfo struct {
	Available bool
	Error     string
	Defaults  any
	Live      map[string]RelayLive
	// Targets is the engine's current state per target; when the engine is
	// unavailable the read model falls back to the persisted state.
	Targets map[string]raftstore.RelayTarget
}

// RelayLive is a target's in-process load.
type RelayLive struct {
	InFlight int `json:"in_flight"`
	Waiting  int `json:"waiting"`
}

// ReadModel is GET /v1/browser.
type ReadModel struct {
	Records                 []RecordView                         `json:"records"`
	Clients                 []ClientView                         `json:"clients"`
	ShellRuntime            json.RawMessage                      `json:"shell_runtime"`
	LastActionResult        *raftstore.StoredActionResult        `json:"last_action_result"`
	AutomationConversations []bridgeproto.AutomationConversation `json:"automation_conversations"`
	Policy                  Policy                               `json:"policy"`
	Summary                 Summary                              `json:"summary"`
	Pairing                 PairingView                          `json:"pairing"`
	GeneratedAt             time.Time                            `json:"generated_at"`
	// NextCursor pages on (GET /v1/browser?cursor=); absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Summary counts what the read model holds (before filtering).
type Summary struct {
	Connected int `json:"connected"`
	Records   int `json:"records"`
	Fresh     int `json:"fresh"`
	Stale     int `json:"stale"`
	Lost      int `json:"lost"`
}

// RecordView is one entry of records[].
type RecordView struct {
	Key                   string                        `json:"key"`
	ClientID              string                        `json:"client_id"`
	Platform              string                        `json:"platform"`
	Account               string                        `json:"account"`
	Browser               string                        `json:"browser"`
	Host                  string                        `json:"host"`
	View                  string                        `json:"view"`
	Status                string                        `json:"status"`
	Connected             bool                          `json:"connected"`
	CredentialFingerprint string                        `json:"credential_fingerprint"`
	HeaderNames           []string                      `json:"header_names"`
	HeaderCount           int                           `json:"header_count"`
	CookieCount           int                           `json:"cookie_count"`
	Endpoints             []raftstore.BrowserEndpoint   `json:"endpoints"`
	EndpointMetadata      EndpointMetadata              `json:"endpoint_metadata"`
	Timestamps            Timestamps                    `json:"timestamps"`
	ShellRuntime          json.RawMessage               `json:"shell_runtime"`
	LastActionResult      *raftstore.StoredActionResult `json:"last_action_result"`
}

// EndpointMetadata summarises the captured endpoints.
type EndpointMetadata struct {
	Count          int       `json:"count"`
	StreamingCount int       `json:"streaming_count"`
	Methods        []string  `json:"methods"`
	Kinds          []string  `json:"kinds"`
	Host           string    `json:"host"`
	CapturedAt     time.Time `json:"captured_at,omitzero"`
}

// Timestamps are a record's times (RFC 3339, zero times omitted).
type Timestamps struct {
	FirstSeenAt      *time.Time `json:"first_seen_at,omitempty"`
	UpdatedAt        *time.Time `json:"updated_at,omitempty"`
	CredentialsAt    *time.Time `json:"credentials_at,omitempty"`
	EndpointsAt      *time.Time `json:"endpoints_at,omitempty"`
	LastActivityAt   *time.Time `json:"last_activity_at,omitempty"`
	ConnectedAt      *time.Time `json:"connected_at,omitempty"`
	DisconnectedAt   *time.Time `json:"disconnected_at,omitempty"`
	LastSeenAt       *time.Time `json:"last_seen_at,omitempty"`
	LastStaleSweepAt *time.Time `json:"last_stale_sweep_at,omitempty"`
}

// ClientView is one plugin instance with its own last action result.
type ClientView struct {
	ClientID           string                        `json:"client_id"`
	Browser            string                        `json:"browser"`
	ExtensionVersion   string                        `json:"extension_version"`
	Connected          bool                          `json:"connected"`
	Remote             string                        `json:"remote,omitempty"`
	LastConnectedAt    *time.Time                    `json:"last_connected_at,omitempty"`
	LastDisconnectedAt *time.Time                    `json:"last_disconnected_at,omitempty"`
	LastSeenAt         *time.Time                    `json:"last_seen_at,omitempty"`
	ShellRuntime       json.RawMessage               `json:"shell_runtime"`
	LastActionResult   *raftstore.StoredActionResult `json:"last_action_result"`
	// Paired: the client holds a bridge credential (code pairing); Auth is
	// how its live connection authenticated (token or credential); Scopes
	// what its conversations' instruction blocks may do (pairing.go).
	Paired bool     `json:"paired"`
	Auth   string   `json:"auth,omitempty"`
	Scopes []string `json:"scopes"`
}

// Policy is the risk-control defaults and the per-target diagnostics.
type Policy struct {
	DefaultStaleLeaseMs int64                 `json:"default_stale_lease_ms"`
	StaleAfterMs        int64                 `json:"stale_after_ms"`
	LostAfterMs         int64                 `json:"lost_after_ms"`
	SweepIntervalMs     int64                 `json:"sweep_interval_ms"`
	KeepaliveMs         int64                 `json:"keepalive_ms"`
	ActionTimeoutMs     int64                 `json:"action_timeout_ms"`
	RequestTimeoutMs    int64                 `json:"request_timeout_ms"`
	Relay               any                   `json:"relay"`
	RelayAvailable      bool                  `json:"relay_available"`
	RelayError          string                `json:"relay_error,omitempty"`
	Targets             map[string]TargetDiag `json:"targets"`
}

// TargetDiag is one target's (platform + client + account) diagnostics and
// relay state. Windows, backoff and breaker come from the FSM and so survive
// restarts; in_flight and waiting are this process only.
type TargetDiag struct {
	Platform             string                 `json:"platform"`
	ClientID             string                 `json:"client_id"`
	Account              string                 `json:"account"`
	Status               string                 `json:"status,omitempty"`
	LastActivityAt       *time.Time             `json:"last_activity_at,omitempty"`
	LastActivityKind     string                 `json:"last_activity_kind,omitempty"`
	StaleSweepCount      int                    `json:"stale_sweep_count"`
	LastStaleSweepAt     *time.Time             `json:"last_stale_sweep_at,omitempty"`
	LastStaleSweepStatus string                 `json:"last_stale_sweep_status,omitempty"`
	Relay                *raftstore.RelayTarget `json:"relay,omitempty"`
	InFlight             int                    `json:"in_flight"`
	Waiting              int                    `json:"waiting"`
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return nullJSON
	}
	return append(json.RawMessage{}, r...)
}

func copyResult(r *raftstore.StoredActionResult) *raftstore.StoredActionResult {
	if r == nil {
		return nil
	}
	c := *r
	c.Target, c.Result, c.ShellRuntime = rawOrNull(r.Target), rawOrNull(r.Result), rawOrNull(r.ShellRuntime)
	return &c
}

// ReadModel is the whole read model (every record and automation
// conversation), for callers in this process.
func (h *Hub) ReadModel(f Filter, relay RelayInfo) ReadModel {
	return h.ReadPage(f, Page{}, relay)
}

// ReadPage is ReadPageFrom with relay as the relay engine's part of any
// page.
func (h *Hub) ReadPage(f Filter, p Page, relay RelayInfo) ReadModel {
	return h.ReadPageFrom(f, p, func(keyrange.Range) RelayInfo { return relay })
}

// ReadPageFrom merges live connections with persisted records and the
// relay state, applies f and returns page p (readpage.go). Records come
// from the FSM's key index, automation conversations from its recency
// index and the page's relay targets from the relay area's key index and
// relay (asked for the page's range only), so a page costs its own length;
// the summary's counts of every record are kept while the state and the
// live connections stay as they are.
func (h *Hub) ReadPageFrom(f Filter, p Page, relay RelaySource) ReadModel {
	now := time.Now().UTC()
	liveSeen := h.liveSeen()
	remotes := map[string]string{}
	for _, c := range h.liveConns() {
		remotes[c.clientID] = c.remote
	}
	m := ReadModel{
		Records: []RecordView{}, Clients: []ClientView{}, ShellRuntime: nullJSON, GeneratedAt: now,
		AutomationConversations: []bridgeproto.AutomationConversation{},
		Policy: Policy{
			DefaultStaleLeaseMs: h.cfg.StaleAfter.Milliseconds(), StaleAfterMs: h.cfg.StaleAfter.Milliseconds(),
			LostAfterMs: h.cfg.LostAfter.Milliseconds(), SweepIntervalMs: h.cfg.SweepInterval.Milliseconds(),
			KeepaliveMs: h.cfg.KeepaliveInterval.Milliseconds(), ActionTimeoutMs: h.cfg.ActionTimeout.Milliseconds(),
			RequestTimeoutMs: h.cfg.RequestTimeout.Milliseconds(),
			Targets:          map[string]TargetDiag{},
		},
	}
	next := Cursor{records: listPos{done: true}, automation: listPos{done: true}}
	if !p.After.automation.done {
		if p.Limit == 0 {
			m.AutomationConversations = h.host.AutomationConversations()
		} else {
			var after string
			m.AutomationConversations, after = h.host.AutomationPage(p.Limit, p.After.automation.after)
			if after != "" {
				next.automation = listPos{after: after}
			}
		}
		if m.AutomationConversations == nil {
			m.AutomationConversations = []bridgeproto.AutomationConversation{}
		}
	}
	span := keyrange.Range{None: p.After.records.done, After: p.After.records.after}
	h.host.Read(func(s *raftstore.State) {
		m.ShellRuntime = rawOrNull(s.Browser.ShellRuntime)
		m.LastActionResult = copyResult(s.Browser.LastActionResult)
		// The summary counts every record, whatever the page and filter
		// (kept between reads while nothing it depends on moved: summary.go).
		h.countRecords(s, h.host.StateVersion(), now, liveSeen, h.activity.recordTouches(), &m.Summary)
		// A paired client that has not captured anything yet is only live:
		// it has a record of its own, in key order among the others.
		var liveOnly []RecordView
		for id := range liveSeen {
			cl := s.Browser.Clients[id]
			if cl == nil || s.Browser.HasRecords(id) {
				continue
			}
			v := RecordView{
				Key: raftstore.RecordKey(id, "", ""), ClientID: id, Browser: cl.Browser, View: ViewActiveOnly, Connected: true,
				Status: raftstore.StatusFresh, HeaderNames: []string{}, Endpoints: []raftstore.BrowserEndpoint{},
				EndpointMetadata: EndpointMetadata{Methods: []string{}, Kinds: []string{}},
				Timestamps:       Timestamps{ConnectedAt: tp(cl.LastConnectedAt), LastSeenAt: tp(liveSeen[id])},
				ShellRuntime:     rawOrNull(cl.ShellRuntime), LastActionResult: copyResult(cl.LastActionResult),
			}
			if now.Sub(liveSeen[id]) > h.cfg.StaleAfter {
				v.Status = raftstore.StatusStale
			}
			countStatus(&m.Summary, v.Status)
			if span.Has(v.Key) {
				liveOnly = append(liveOnly, v)
			}
		}
		sort.Slice(liveOnly, func(i, j int) bool { return liveOnly[i].Key < liveOnly[j].Key })
		if !span.None {
			h.pageRecords(s, f, p.Limit, &span, liveOnly, liveSeen, now, &m, &next)
		}
		// Persisted relay state of the page's targets, also of those
		// without a record (a raw relay to a client that never captured
		// that platform).
		s.Relay.TargetsIn(span, func(rt *raftstore.RelayTarget) bool {
			d := m.Policy.Targets[rt.Target]
			c := *rt
			d.Relay = &c
			m.Policy.Targets[rt.Target] = d
			return true
		})
		for id, cl := range s.Browser.Clients {
			if f.ClientID != "" && f.ClientID != id || f.Browser != "" && f.Browser != cl.Browser {
				continue
			}
			_, live := liveSeen[id]
			cv := ClientView{
				ClientID: id, Browser: cl.Browser, ExtensionVersion: cl.ExtensionVersion, Connected: live, Remote: remotes[id],
				LastConnectedAt: tp(cl.LastConnectedAt), LastDisconnectedAt: tp(cl.LastDisconnectedAt), LastSeenAt: tp(cl.LastSeenAt),
				ShellRuntime: rawOrNull(cl.ShellRuntime), LastActionResult: copyResult(cl.LastActionResult),
			}
			if seen, ok := liveSeen[id]; ok {
				cv.LastSeenAt = tp(seen)
			}
			h.pairingOf(&cv, s)
			m.Clients = append(m.Clients, cv)
		}
	})
	// The engine's view, ahead of the last flush, once the page's range
	// is known (and outside the FSM's read lock: it may be a round trip
	// to the relay worker).
	info := relay(span)
	m.Policy.Relay, m.Policy.RelayAvailable, m.Policy.RelayError = info.Defaults, info.Available, info.Error
	for key, rt := range info.Targets {
		if !span.Has(key) {
			continue
		}
		d := m.Policy.Targets[key]
		c := rt
		if d.Relay != nil {
			c.UpdatedAt = d.Relay.UpdatedAt
		}
		d.Relay = &c
		m.Policy.Targets[key] = d
	}
	for key, l := range info.Live {
		if !span.Has(key) {
			continue
		}
		d := m.Policy.Targets[key]
		d.InFlight, d.Waiting = l.InFlight, l.Waiting
		m.Policy.Targets[key] = d
	}
	for key, d := range m.Policy.Targets {
		m.Policy.Targets[key] = h.completeTarget(key, d)
	}
	m.Summary.Connected = len(liveSeen)
	m.Summary.Records = m.Summary.Fresh + m.Summary.Stale + m.Summary.Lost
	sort.Slice(m.Clients, func(i, j int) bool { return m.Clients[i].ClientID < m.Clients[j].ClientID })
	m.Pairing = h.pairingView()
	if !next.records.done || !next.automation.done {
		m.NextCursor = next.String()
	}
	return m
}

// pageRecords walks the records after span.After in key order, persisted
// (the FSM's key index) and live-only ones merged, and keeps the first
// limit (0: all) that match f. The targets of every record walked up to
// the page's last key go into policy.targets; span ends at that key when
// another match follows (next.records then names it).
func (h *Hub) pageRecords(s *raftstore.State, f Filter, limit int, span *keyrange.Range, liveOnly []RecordView, liveSeen map[string]time.Time, now time.Time, m *ReadModel, next *Cursor) {
	more := false
	take := func(v RecordView) bool {
		if !f.match(v) {
			return true
		}
		if limit > 0 && len(m.Records) == limit {
			more = true
			return false
		}
		m.Records = append(m.Records, v)
		return true
	}
	walked := map[string]TargetDiag{}
	s.Browser.RecordsAfter(span.After, func(r *raftstore.BrowserRecord) bool {
		for len(liveOnly) > 0 && liveOnly[0].Key < r.Key {
			if !take(liveOnly[0]) {
				return false
			}
			liveOnly = liveOnly[1:]
		}
		v, d := h.recordView(now, r, s.Browser.Clients[r.ClientID], liveSeen)
		walked[r.Key] = d
		return take(v)
	})
	for !more && len(liveOnly) > 0 {
		if !take(liveOnly[0]) {
			break
		}
		liveOnly = liveOnly[1:]
	}
	if more {
		last := m.Records[len(m.Records)-1].Key
		span.Through, span.Bounded = last, true
		next.records = listPos{after: last}
	}
	for key, d := range walked {
		if span.Has(key) {
			m.Policy.Targets[key] = d
		}
	}
}

// recordView is a persisted record as records[] shows it, and its target's
// diagnostics.
func (h *Hub) recordView(now time.Time, r *raftstore.BrowserRecord, cl *raftstore.BrowserClient, liveSeen map[string]time.Time) (RecordView, TargetDiag) {
	_, live := liveSeen[r.ClientID]
	v := RecordView{
		Key: r.Key, ClientID: r.ClientID, Platform: r.Platform, Account: r.Account, Browser: r.Browser, Host: r.Host,
		View: ViewPersistedOnly, Status: h.status(now, r, cl, liveSeen), Connected: live,
		CredentialFingerprint: r.CredentialFingerprint, HeaderNames: append([]string{}, r.HeaderNames...),
		HeaderCount: r.HeaderCount, CookieCount: r.CookieCount,
		Endpoints:        append([]raftstore.BrowserEndpoint{}, r.Endpoints...),
		EndpointMetadata: endpointMeta(r),
		Timestamps: Timestamps{
			FirstSeenAt: tp(r.FirstSeenAt), UpdatedAt: tp(r.UpdatedAt), CredentialsAt: tp(r.CredentialsAt),
			EndpointsAt: tp(r.EndpointsAt), LastActivityAt: tp(r.LastActivityAt), LastStaleSweepAt: tp(r.LastStaleSweepAt),
		},
		ShellRuntime: nullJSON,
	}
	if live {
		v.View = ViewActiveAndPersisted
	}
	if cl != nil {
		v.Timestamps.ConnectedAt, v.Timestamps.DisconnectedAt, v.Timestamps.LastSeenAt = tp(cl.LastConnectedAt), tp(cl.LastDisconnectedAt), tp(cl.LastSeenAt)
		v.ShellRuntime = rawOrNull(cl.ShellRuntime)
		v.LastActionResult = copyResult(cl.LastActionResult)
		if v.Browser == "" {
			v.Browser = cl.Browser
		}
	}
	if seen, ok := liveSeen[r.ClientID]; ok {
		v.Timestamps.LastSeenAt = tp(seen)
	}
	d := TargetDiag{
		Platform: r.Platform, ClientID: r.ClientID, Account: r.Account, Status: v.Status,
		LastActivityAt: tp(r.LastActivityAt), LastActivityKind: r.LastActivityKind,
		StaleSweepCount: r.StaleSweepCount, LastStaleSweepAt: tp(r.LastStaleSweepAt), LastStaleSweepStatus: r.LastStaleSweepStatus,
	}
	if t, ok := h.activity.recordTouch(r.Key); ok && t.At.After(r.LastActivityAt) {
		d.LastActivityAt, d.LastActivityKind = tp(t.At), t.Kind
	}
	return v, d
}

func countStatus(s *Summary, st string) {
	switch st {
	case raftstore.StatusFresh:
		s.Fresh++
	case raftstore.StatusStale:
		s.Stale++
	case raftstore.StatusLost:
		s.Lost++
	}
}

func (f Filter) match(v RecordView) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.Platform, v.Platform) && eq(f.Account, v.Account) && eq(f.Browser, v.Browser) &&
		eq(f.ClientID, v.ClientID) && eq(f.Host, v.Host) && eq(f.Status, v.Status)
}

func endpointMeta(r *raftstore.BrowserRecord) EndpointMetadata {
	em := EndpointMetadata{Count: len(r.Endpoints), Host: r.Host, CapturedAt: r.EndpointsAt, Methods: []string{}, Kinds: []string{}}
	methods, kinds := map[string]bool{}, map[string]bool{}
	for _, e := range r.Endpoints {
		if e.Streaming {
			em.StreamingCount++
		}
		methods[e.Method] = true
		if e.Kind != "" {
			kinds[e.Kind] = true
		}
	}
	for k := range methods {
		em.Methods = append(em.Methods, k)
	}
	for k := range kinds {
		em.Kinds = append(em.Kinds, k)
	}
	sort.Strings(em.Methods)
	sort.Strings(em.Kinds)
	return em
}

// completeTarget fills what a target without a captured record lacks (a raw
// relay to a client that never captured that platform, typically
// platform_c): its identity from the key <platform>/<clientId>/<account>,
// and its last activity from the unflushed relay touch or, durably, from
// the relay engine's last outcome. Every platform's target then carries the
// same fields.
func (h *Hub) completeTarget(key string, d TargetDiag) TargetDiag {
	if d.Platform == "" && d.ClientID == "" {
		if platform, rest, ok := strings.Cut(key, "/"); ok {
			client, account, _ := strings.Cut(rest, "/")
			d.Platform, d.ClientID, d.Account = platform, client, account
		}
	}
	if d.LastActivityAt == nil {
		if t, ok := h.activity.recordTouch(key); ok {
			d.LastActivityAt, d.LastActivityKind = tp(t.At), t.Kind
		} else if d.Relay != nil && !d.Relay.LastOutcomeAt.IsZero() {
			d.LastActivityAt, d.LastActivityKind = tp(d.Relay.LastOutcomeAt), "relay_outcome"
		}
	}
	return d
}
