package raftstore

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Browser commands. Each carries metadata only: the bridge reduces captured
// credentials to names, counts and a fingerprint before proposing, because
// whatever is proposed lands in the raft log on disk.
const (
	CmdBrowserClient       = "browser.client"
	CmdBrowserCredentials  = "browser.credentials"
	CmdBrowserEndpoints    = "browser.endpoints"
	CmdBrowserActionResult = "browser.action_result"
	CmdBrowserShellRuntime = "browser.shell_runtime"
	CmdBrowserActivity     = "browser.activity"
	CmdBrowserSweep        = "browser.sweep"
)

// Record statuses (SPEC.md "Browser record status").
const (
	StatusFresh = "fresh"
	StatusStale = "stale"
	StatusLost  = "lost"
)

// Bounds that keep the browser area from growing without limit.
const (
	MaxBrowserClients = 512
	MaxBrowserRecords = 2048
	maxRawBytes       = 64 << 10
)

// BrowserState is the durable part of the browser read model.
type BrowserState struct {
	Clients          map[string]*BrowserClient `json:"clients"`
	Records          map[string]*BrowserRecord `json:"records"`
	LastActionResult *StoredActionResult       `json:"last_action_result,omitempty"`
	ShellRuntime     json.RawMessage           `json:"shell_runtime,omitempty"`
	ShellRuntimeAt   time.Time                 `json:"shell_runtime_at,omitzero"`
	// index orders Records by key (browser_keys.go).
	index recordKeys
}

// BrowserClient is one plugin instance, keyed by its clientId.
type BrowserClient struct {
	ClientID           string              `json:"client_id"`
	Browser            string              `json:"browser"`
	ExtensionVersion   string              `json:"extension_version"`
	FirstSeenAt        time.Time           `json:"first_seen_at"`
	LastConnectedAt    time.Time           `json:"last_connected_at"`
	LastDisconnectedAt time.Time           `json:"last_disconnected_at,omitzero"`
	LastSeenAt         time.Time           `json:"last_seen_at"`
	Connected          bool                `json:"connected"`
	ShellRuntime       json.RawMessage     `json:"shell_runtime,omitempty"`
	ShellRuntimeAt     time.Time           `json:"shell_runtime_at,omitzero"`
	LastActionResult   *StoredActionResult `json:"last_action_result,omitempty"`
}

// BrowserEndpoint is one captured API endpoint (path without query).
type BrowserEndpoint struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Kind      string `json:"kind,omitempty"`
	Streaming bool   `json:"streaming,omitempty"`
}

// BrowserRecord is what one client captured on one platform for one account.
// It is also the relay "target" whose diagnostics policy reports.
type BrowserRecord struct {
	Key                   string            `json:"key"`
	ClientID              string            `json:"client_id"`
	Platform              string            `json:"platform"`
	Account               string            `json:"account"`
	Browser               string            `json:"browser"`
	Host                  string            `json:"host"`
	CredentialFingerprint string            `json:"credential_fingerprint"`
	HeaderNames           []string          `json:"header_names"`
	HeaderCount           int               `json:"header_count"`
	CookieCount           int               `json:"cookie_count"`
	Endpoints             []BrowserEndpoint `json:"endpoints"`
	FirstSeenAt           time.Time         `json:"first_seen_at"`
	UpdatedAt             time.Time         `json:"updated_at"`
	CredentialsAt         time.Time         `json:"credentials_at,omitzero"`
	EndpointsAt           time.Time         `json:"endpoints_at,omitzero"`
	LastActivityAt        time.Time         `json:"last_activity_at"`
	LastActivityKind      string            `json:"last_activity_kind"`
	// SweptStatus is the status the last stale sweep wrote; the read model
	// recomputes the live status from times, this is its durable trace.
	SweptStatus          string    `json:"swept_status"`
	StaleSweepCount      int       `json:"stale_sweep_count"`
	LastStaleSweepAt     time.Time `json:"last_stale_sweep_at,omitzero"`
	LastStaleSweepStatus string    `json:"last_stale_sweep_status,omitempty"`
}

// StoredActionResult is a plugin's action_result as kept in the FSM.
type StoredActionResult struct {
	ActionID     string          `json:"action_id"`
	Action       string          `json:"action"`
	Platform     string          `json:"platform,omitempty"`
	ClientID     string          `json:"client_id"`
	Accepted     bool            `json:"accepted"`
	Completed    bool            `json:"completed"`
	Failed       bool            `json:"failed"`
	Reason       string          `json:"reason,omitempty"`
	Target       json.RawMessage `json:"target,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ShellRuntime json.RawMessage `json:"shell_runtime,omitempty"`
	At           time.Time       `json:"at"`
}

// RecordKey is the key of a record: client, platform, account.
func RecordKey(clientID, platform, account string) string {
	return platform + "/" + clientID + "/" + account
}

// BrowserClientEvent is the payload of CmdBrowserClient.
type BrowserClientEvent struct {
	ClientID         string          `json:"client_id"`
	Browser          string          `json:"browser,omitempty"`
	ExtensionVersion string          `json:"extension_version,omitempty"`
	Event            string          `json:"event"` // connect or disconnect
	ShellRuntime     json.RawMessage `json:"shell_runtime,omitempty"`
}

// BrowserCredentials is the payload of CmdBrowserCredentials: metadata only.
type BrowserCredentials struct {
	RecordRef
	Fingerprint string   `json:"credential_fingerprint"`
	HeaderNames []string `json:"header_names"`
	HeaderCount int      `json:"header_count"`
	CookieCount int      `json:"cookie_count"`
}

// BrowserEndpoints is the payload of CmdBrowserEndpoints.
type BrowserEndpoints struct {
	RecordRef
	Endpoints []BrowserEndpoint `json:"endpoints"`
}

// RecordRef names the record a captured login or endpoint list belongs to.
// Embedded, so its fields stay flat in the payload JSON.
type RecordRef struct {
	ClientID string `json:"client_id"`
	Browser  string `json:"browser,omitempty"`
	Platform string `json:"platform"`
	Account  string `json:"account,omitempty"`
	Host     string `json:"host,omitempty"`
}

func (ref RecordRef) validate() error {
	if err := needID("client_id", ref.ClientID); err != nil {
		return err
	}
	return needID("platform", ref.Platform)
}

// touchRecord marks the client and returns its record for ref, creating both
// as needed.
func (b *BrowserState) touchRecord(ref RecordRef, at time.Time) *BrowserRecord {
	b.client(ref.ClientID, ref.Browser, at)
	return b.record(ref.ClientID, ref.Browser, ref.Platform, ref.Account, ref.Host, at)
}

// BrowserShellRuntime is the payload of CmdBrowserShellRuntime.
type BrowserShellRuntime struct {
	ClientID     string          `json:"client_id"`
	ShellRuntime json.RawMessage `json:"shell_runtime"`
}

// Touch is one activity mark: a client (Key empty) or one record.
type Touch struct {
	ClientID string    `json:"client_id,omitempty"`
	Key      string    `json:"key,omitempty"`
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
}

// BrowserActivity is the payload of CmdBrowserActivity. The bridge batches
// activity in memory and flushes it periodically: a raft commit per
// keepalive would write the disk every few seconds per client for nothing.
type BrowserActivity struct {
	Touches []Touch `json:"touches"`
}

// Sweep is one status transition found by the stale sweeper.
type Sweep struct {
	Key    string    `json:"key"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
}

// BrowserSweep is the payload of CmdBrowserSweep.
type BrowserSweep struct {
	Sweeps []Sweep `json:"sweeps"`
}

func (b *BrowserState) normalize() {
	if b.Clients == nil {
		b.Clients = map[string]*BrowserClient{}
	}
	if b.Records == nil {
		b.Records = map[string]*BrowserRecord{}
	}
	b.index.reset(b.Records)
}

func checkRaw(name string, raw json.RawMessage) error {
	if len(raw) > maxRawBytes {
		return fmt.Errorf("%s is larger than %d bytes", name, maxRawBytes)
	}
	if len(raw) > 0 && !json.Valid(raw) {
		return fmt.Errorf("%s is not valid JSON", name)
	}
	return nil
}

func (b *BrowserState) client(id, browser string, at time.Time) *BrowserClient {
	c := b.Clients[id]
	if c == nil {
		evictOldest(b.Clients, MaxBrowserClients-1, func(c *BrowserClient) time.Time { return c.LastSeenAt })
		c = &BrowserClient{ClientID: id, FirstSeenAt: at}
		b.Clients[id] = c
	}
	if browser != "" {
		c.Browser = browser
	}
	c.LastSeenAt = at
	return c
}

func (b *BrowserState) record(clientID, browser, platform, account, host string, at time.Time) *BrowserRecord {
	key := RecordKey(clientID, platform, account)
	r := b.Records[key]
	if r == nil {
		for _, gone := range evictOldest(b.Records, MaxBrowserRecords-1, func(r *BrowserRecord) time.Time { return r.UpdatedAt }) {
			b.index.remove(gone)
		}
		r = &BrowserRecord{Key: key, ClientID: clientID, Platform: platform, Account: account, FirstSeenAt: at, HeaderNames: []string{}, Endpoints: []BrowserEndpoint{}}
		b.Records[key] = r
		b.index.add(key, clientID)
	}
	if browser != "" {
		r.Browser = browser
	}
	if host != "" {
		r.Host = host
	}
	r.UpdatedAt, r.LastActivityAt = at, at
	r.SweptStatus = StatusFresh
	return r
}

// evictOldest deletes the entries with the oldest times until at most keep
// remain, and returns their keys. Ties break on the key so every replica
// evicts the same entries.
func evictOldest[T any](m map[string]T, keep int, when func(T) time.Time) []string {
	if len(m) <= keep {
		return nil
	}
	if len(m) == keep+1 {
		// The usual case (one entry in, one out at the bound): a linear
		// scan for the oldest, not a sort of the whole area per insert.
		var oldest string
		var at time.Time
		first := true
		for k, v := range m {
			t := when(v)
			if first || t.Before(at) || (t.Equal(at) && k < oldest) {
				oldest, at, first = k, t, false
			}
		}
		delete(m, oldest)
		return []string{oldest}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := when(m[keys[i]]), when(m[keys[j]])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return keys[i] < keys[j]
	})
	gone := keys[:len(m)-keep]
	for _, k := range gone {
		delete(m, k)
	}
	return gone
}

func needID(name, v string) error {
	if v == "" || len(v) > 256 {
		return fmt.Errorf("%s must be 1 to 256 bytes", name)
	}
	return nil
}

func applyBrowserClient(s *State, c Command) (any, error) {
	var p BrowserClientEvent
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := needID("client_id", p.ClientID); err != nil {
		return nil, err
	}
	if p.Event != "connect" && p.Event != "disconnect" {
		return nil, fmt.Errorf("event must be connect or disconnect")
	}
	if err := checkRaw("shell_runtime", p.ShellRuntime); err != nil {
		return nil, err
	}
	cl := s.Browser.client(p.ClientID, p.Browser, c.At)
	if p.ExtensionVersion != "" {
		cl.ExtensionVersion = p.ExtensionVersion
	}
	if p.Event == "connect" {
		cl.Connected, cl.LastConnectedAt = true, c.At
		// A reconnecting plugin takes its records back: they are fresh again.
		for _, r := range s.Browser.Records {
			if r.ClientID == p.ClientID {
				r.LastActivityAt, r.LastActivityKind, r.SweptStatus = c.At, "connect", StatusFresh
			}
		}
	} else {
		cl.Connected, cl.LastDisconnectedAt = false, c.At
	}
	if len(p.ShellRuntime) > 0 {
		cl.ShellRuntime, cl.ShellRuntimeAt = p.ShellRuntime, c.At
		s.Browser.ShellRuntime, s.Browser.ShellRuntimeAt = p.ShellRuntime, c.At
	}
	return *cl, nil
}

func applyBrowserCredentials(s *State, c Command) (any, error) {
	var p BrowserCredentials
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if len(p.Fingerprint) != len("sha256:")+64 || p.Fingerprint[:7] != "sha256:" {
		return nil, fmt.Errorf("credential_fingerprint must be sha256:<64 hex>")
	}
	if len(p.HeaderNames) > 256 {
		return nil, fmt.Errorf("too many header names")
	}
	r := s.Browser.touchRecord(p.RecordRef, c.At)
	r.CredentialFingerprint = p.Fingerprint
	r.HeaderNames = append([]string{}, p.HeaderNames...)
	r.HeaderCount, r.CookieCount = p.HeaderCount, p.CookieCount
	r.CredentialsAt, r.LastActivityKind = c.At, "credentials"
	return *r, nil
}

func applyBrowserEndpoints(s *State, c Command) (any, error) {
	var p BrowserEndpoints
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if len(p.Endpoints) > 500 {
		return nil, fmt.Errorf("too many endpoints")
	}
	r := s.Browser.touchRecord(p.RecordRef, c.At)
	r.Endpoints = append([]BrowserEndpoint{}, p.Endpoints...)
	r.EndpointsAt, r.LastActivityKind = c.At, "api_endpoints"
	return *r, nil
}

func applyBrowserActionResult(s *State, c Command) (any, error) {
	var p StoredActionResult
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := needID("client_id", p.ClientID); err != nil {
		return nil, err
	}
	for name, raw := range map[string]json.RawMessage{"target": p.Target, "result": p.Result, "shell_runtime": p.ShellRuntime} {
		if err := checkRaw(name, raw); err != nil {
			return nil, err
		}
	}
	p.At = c.At
	cl := s.Browser.client(p.ClientID, "", c.At)
	stored := p
	cl.LastActionResult = &stored
	s.Browser.LastActionResult = &stored
	if len(p.ShellRuntime) > 0 {
		cl.ShellRuntime, cl.ShellRuntimeAt = p.ShellRuntime, c.At
		s.Browser.ShellRuntime, s.Browser.ShellRuntimeAt = p.ShellRuntime, c.At
	}
	return stored, nil
}

func applyBrowserShellRuntime(s *State, c Command) (any, error) {
	var p BrowserShellRuntime
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := needID("client_id", p.ClientID); err != nil {
		return nil, err
	}
	if len(p.ShellRuntime) == 0 {
		return nil, fmt.Errorf("shell_runtime is required")
	}
	if err := checkRaw("shell_runtime", p.ShellRuntime); err != nil {
		return nil, err
	}
	cl := s.Browser.client(p.ClientID, "", c.At)
	cl.ShellRuntime, cl.ShellRuntimeAt = p.ShellRuntime, c.At
	s.Browser.ShellRuntime, s.Browser.ShellRuntimeAt = p.ShellRuntime, c.At
	return nil, nil
}

func applyBrowserActivity(s *State, c Command) (any, error) {
	var p BrowserActivity
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if len(p.Touches) > 4*MaxBrowserRecords {
		return nil, fmt.Errorf("too many touches")
	}
	for _, t := range p.Touches {
		if t.Key != "" {
			if r := s.Browser.Records[t.Key]; r != nil && t.At.After(r.LastActivityAt) {
				r.LastActivityAt, r.LastActivityKind = t.At, t.Kind
				r.SweptStatus = StatusFresh
			}
			continue
		}
		if cl := s.Browser.Clients[t.ClientID]; cl != nil && t.At.After(cl.LastSeenAt) {
			cl.LastSeenAt = t.At
		}
	}
	return nil, nil
}

func applyBrowserSweep(s *State, c Command) (any, error) {
	var p BrowserSweep
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	for _, sw := range p.Sweeps {
		if sw.Status != StatusFresh && sw.Status != StatusStale && sw.Status != StatusLost {
			return nil, fmt.Errorf("unknown status %q", sw.Status)
		}
	}
	for _, sw := range p.Sweeps {
		r := s.Browser.Records[sw.Key]
		if r == nil || r.SweptStatus == sw.Status {
			continue
		}
		r.SweptStatus = sw.Status
		// Only ageing counts as a sweep; a record turning fresh again is
		// the client coming back, not the sweeper's doing.
		if sw.Status != StatusFresh {
			r.StaleSweepCount++
			r.LastStaleSweepAt, r.LastStaleSweepStatus = sw.At, sw.Status
		}
	}
	return nil, nil
}
