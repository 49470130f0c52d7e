package raftstore

import (
	"fmt"
	"strings"
	"time"
)

// Refused pairing attempts (issue 25 §1: "attempts refused at pairing
// (count and last reason), so an unpaired extension is visible"). They are
// kept here so a restart or a leader switch does not wipe what an operator
// is looking for. The bridge counts refusals in memory and proposes the
// deltas at most once per flush interval (one command whatever the flood),
// and the area is bounded: one bucket per client id and per remote
// address, the least recently refused evicted past MaxRefusalBuckets.
const CmdPairRefusals = "browser.pair_refusals"

// Bounds of the refusal area.
const (
	MaxRefusalBuckets = 128
	// maxRefusalReason bounds a stored reason (they are the daemon's own
	// messages, never what the client sent).
	maxRefusalReason = 300
	// maxRefusalDelta bounds one flush's count per bucket.
	maxRefusalDelta = 1 << 40
)

// Bucket key prefixes: a refusal counts in its client's and its address's.
const (
	RefusalByClient = "client:"
	RefusalByRemote = "remote:"
)

// Refusals is one bucket of refused hellos (or the total): how many, and
// the last one's code, reason, client, address and time.
type Refusals struct {
	Key          string    `json:"key,omitempty"`
	Count        int64     `json:"count"`
	LastCode     string    `json:"last_code,omitempty"`
	LastReason   string    `json:"last_reason,omitempty"`
	LastClientID string    `json:"last_client_id,omitempty"`
	LastRemote   string    `json:"last_remote,omitempty"`
	LastAt       time.Time `json:"last_at,omitzero"`
}

// Add folds a later delta d into r: counts add, the last fields follow the
// later refusal.
func (r *Refusals) Add(d Refusals) {
	r.Count += d.Count
	if !d.LastAt.Before(r.LastAt) {
		r.LastCode, r.LastReason, r.LastClientID, r.LastRemote, r.LastAt = d.LastCode, d.LastReason, d.LastClientID, d.LastRemote, d.LastAt
	}
}

// PairRefusalsDelta is the payload of CmdPairRefusals: what was refused
// since the last flush, in total and per bucket.
type PairRefusalsDelta struct {
	Total   Refusals   `json:"total"`
	Buckets []Refusals `json:"buckets"`
}

func checkRefusals(r Refusals, bucket bool) error {
	if r.Count < 1 || r.Count > maxRefusalDelta {
		return fmt.Errorf("refusal count must be 1 to %d", int64(maxRefusalDelta))
	}
	if len(r.LastReason) > maxRefusalReason || len(r.LastCode) > 64 || len(r.LastClientID) > 256 || len(r.LastRemote) > 256 {
		return fmt.Errorf("refusal fields too long")
	}
	if bucket {
		id, ok := strings.CutPrefix(r.Key, RefusalByClient)
		if !ok {
			id, ok = strings.CutPrefix(r.Key, RefusalByRemote)
		}
		if !ok || id == "" || len(id) > 256 {
			return fmt.Errorf("refusal bucket key must be %sID or %sADDRESS", RefusalByClient, RefusalByRemote)
		}
	}
	return nil
}

func applyPairRefusals(s *State, c Command) (any, error) {
	var p PairRefusalsDelta
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := checkRefusals(p.Total, false); err != nil {
		return nil, err
	}
	if len(p.Buckets) > 2*MaxRefusalBuckets {
		return nil, fmt.Errorf("at most %d refusal buckets per flush", 2*MaxRefusalBuckets)
	}
	for _, b := range p.Buckets {
		if err := checkRefusals(b, true); err != nil {
			return nil, err
		}
	}
	p.Total.Key = ""
	s.Pairing.RefusedTotal.Add(p.Total)
	for _, b := range p.Buckets {
		cur := s.Pairing.Refused[b.Key]
		if cur == nil {
			cur = &Refusals{Key: b.Key}
			s.Pairing.Refused[b.Key] = cur
		}
		cur.Add(b)
		cur.Key = b.Key
	}
	evictOldest(s.Pairing.Refused, MaxRefusalBuckets, func(r *Refusals) time.Time { return r.LastAt })
	return s.Pairing.RefusedTotal, nil
}
