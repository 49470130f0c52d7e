// Package snapfile is the on-disk form of an svcd state backup (`svcd
// snapshot save`, `svcctl snapshot save`, GET /v1/snapshot): a magic, a
// JSON header (format version, cluster id, raft index and term, creation
// time, payload length), the raft FSM snapshot payload, a SHA-256 over
// everything before it and (format 2, issue 34) an HMAC-SHA256 over the
// same bytes under a key derived from the cluster key. A reader checks all
// of it before it hands anything back, so a corrupt, truncated or foreign
// file changes nothing; ReadAuth also refuses a file whose MAC does not
// match (edited) and says whether it was authenticated at all (format 1).
package snapfile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Magic opens every svcd snapshot file.
const Magic = "SVCDSNAP"

// FormatVersion is the file format this build writes and the newest it
// reads. 1: SHA-256 trailer only (not authenticated). 2: SHA-256 then
// HMAC-SHA256 (Header.Auth "hmac-sha256").
const FormatVersion = 2

// AuthHMAC names format 2's MAC in the header.
const AuthHMAC = "hmac-sha256"

// maxHeader bounds the JSON header; a real one is ~200 bytes.
const maxHeader = 64 << 10

// Header describes the snapshot a file carries.
type Header struct {
	FormatVersion int       `json:"format_version"`
	ClusterID     string    `json:"cluster_id"`
	NodeID        string    `json:"node_id"`
	Index         uint64    `json:"index"`
	Term          uint64    `json:"term"`
	CreatedAt     time.Time `json:"created_at"`
	PayloadBytes  int64     `json:"payload_bytes"`
	Auth          string    `json:"auth,omitempty"` // AuthHMAC from format 2 on
}

// Errors a reader returns; each says why the file was refused.
var (
	ErrForeign   = errors.New("not an svcd snapshot file (wrong magic)")
	ErrTruncated = errors.New("snapshot file is truncated")
	ErrChecksum  = errors.New("snapshot file checksum mismatch (the file is corrupt)")
	ErrTooLarge  = errors.New("snapshot payload is larger than allowed")
	// ErrTampered is a format-2 file whose MAC does not match under this
	// cluster's key: edited after it was written, or of a cluster with
	// another key.
	ErrTampered = errors.New("snapshot file is not authentic: its MAC does not match this cluster's key (edited, or made with another cluster key)")
)

// Write writes h and the payload read from payload (exactly h.PayloadBytes
// bytes) to w, followed by the checksum and, with a key, the MAC (format
// 2); without a key it writes format 1 (not authenticated).
func Write(w io.Writer, h Header, payload io.Reader, key []byte) error {
	h.FormatVersion, h.Auth = 1, ""
	if len(key) > 0 {
		h.FormatVersion, h.Auth = FormatVersion, AuthHMAC
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode snapshot header: %w", err)
	}
	sum, mac := sha256.New(), hmac.New(sha256.New, key)
	out := io.MultiWriter(w, sum, mac)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(hb)))
	for _, b := range [][]byte{[]byte(Magic), n[:], hb} {
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	copied, err := io.Copy(out, io.LimitReader(payload, h.PayloadBytes))
	if err != nil {
		return fmt.Errorf("copy snapshot payload: %w", err)
	}
	if copied != h.PayloadBytes {
		return fmt.Errorf("snapshot payload is %d bytes, header says %d", copied, h.PayloadBytes)
	}
	trailer := sum.Sum(nil)
	if h.Auth == AuthHMAC {
		trailer = mac.Sum(trailer)
	}
	_, err = w.Write(trailer)
	return err
}

// Read reads and checks a whole snapshot file from r without a key: magic,
// format version, header, payload length, checksum and nothing after it; a
// format-2 file's MAC is read but not checked (ReadAuth checks it).
func Read(r io.Reader, maxPayload int64) (Header, []byte, error) {
	h, payload, _, err := read(r, maxPayload)
	return h, payload, err
}

// ReadAuth is Read that also checks a format-2 file's MAC under key
// (ErrTampered when it does not match) and reports whether the file was
// authenticated: false for format 1, which has no MAC.
func ReadAuth(r io.Reader, maxPayload int64, key []byte) (Header, []byte, bool, error) {
	h, payload, check, err := read(r, maxPayload)
	if err != nil {
		return Header{}, nil, false, err
	}
	if h.Auth != AuthHMAC {
		return h, payload, false, nil
	}
	if !check(key) {
		return Header{}, nil, false, ErrTampered
	}
	return h, payload, true, nil
}

// Read reads and checks a whole snapshot file from r: magic, format version,
// header, payload length, checksum and nothing after it. maxPayload bounds
// the payload it will hold in memory.
// read checks everything but the MAC; check(key) then says whether the
// MAC (format 2) matches.
func read(r io.Reader, maxPayload int64) (Header, []byte, func(key []byte) bool, error) {
	var h Header
	sum := sha256.New()
	tr := io.TeeReader(r, sum)
	lead := make([]byte, len(Magic)+4)
	if _, err := io.ReadFull(tr, lead); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if !bytes.HasPrefix([]byte(Magic), lead[:min(len(lead), len(Magic))]) {
				return h, nil, nil, ErrForeign
			}
			return h, nil, nil, ErrTruncated
		}
		return h, nil, nil, err
	}
	if string(lead[:len(Magic)]) != Magic {
		return h, nil, nil, ErrForeign
	}
	hl := binary.BigEndian.Uint32(lead[len(Magic):])
	if hl == 0 || hl > maxHeader {
		return h, nil, nil, fmt.Errorf("snapshot header length %d out of range (1..%d)", hl, maxHeader)
	}
	hb := make([]byte, hl)
	if _, err := io.ReadFull(tr, hb); err != nil {
		return h, nil, nil, truncated(err)
	}
	// The header is read before the checksum can be checked: its fields are
	// only trusted once the checksum over the whole file matched.
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, nil, nil, fmt.Errorf("snapshot header is not valid: %v", err)
	}
	if h.FormatVersion < 1 {
		return Header{}, nil, nil, fmt.Errorf("snapshot format version %d is not valid", h.FormatVersion)
	}
	if h.FormatVersion > FormatVersion {
		return Header{}, nil, nil, fmt.Errorf("snapshot format version %d is newer than this svcd knows (%d): restore it with a newer svcd", h.FormatVersion, FormatVersion)
	}
	if (h.FormatVersion >= 2) != (h.Auth == AuthHMAC) {
		return Header{}, nil, nil, fmt.Errorf("snapshot header auth %q does not fit format version %d", h.Auth, h.FormatVersion)
	}
	if h.PayloadBytes < 0 {
		return Header{}, nil, nil, fmt.Errorf("snapshot payload length %d is not valid", h.PayloadBytes)
	}
	if h.PayloadBytes > maxPayload {
		return Header{}, nil, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, h.PayloadBytes, maxPayload)
	}
	payload := make([]byte, h.PayloadBytes)
	if _, err := io.ReadFull(tr, payload); err != nil {
		return Header{}, nil, nil, truncated(err)
	}
	want := sum.Sum(nil)
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, got); err != nil {
		return Header{}, nil, nil, truncated(err)
	}
	if !bytes.Equal(got, want) {
		return Header{}, nil, nil, ErrChecksum
	}
	gotMAC := make([]byte, 0, sha256.Size)
	if h.Auth == AuthHMAC {
		gotMAC = gotMAC[:sha256.Size]
		if _, err := io.ReadFull(r, gotMAC); err != nil {
			return Header{}, nil, nil, truncated(err)
		}
	}
	var extra [1]byte
	if n, _ := io.ReadFull(r, extra[:]); n > 0 {
		return Header{}, nil, nil, errors.New("snapshot file has data after its checksum (the file is corrupt)")
	}
	check := func(key []byte) bool {
		// The MAC covers what the checksum does: magic, length, header, payload.
		m := hmac.New(sha256.New, key)
		for _, b := range [][]byte{lead, hb, payload} {
			m.Write(b)
		}
		return len(key) > 0 && hmac.Equal(m.Sum(nil), gotMAC)
	}
	return h, payload, check, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}
