// Package snapfile is the on-disk form of an svcd state backup (`svcd
// snapshot save`, `svcctl snapshot save`, GET /v1/snapshot): a magic, a
// JSON header (format version, cluster id, raft index and term, creation
// time, payload length), the raft FSM snapshot payload, and a SHA-256 over
// everything before it. A reader checks all of it before it hands anything
// back, so a corrupt, truncated or foreign file changes nothing.
package snapfile

import (
	"bytes"
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

// FormatVersion is the file format this build writes and the newest it reads.
const FormatVersion = 1

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
}

// Errors a reader returns; each says why the file was refused.
var (
	ErrForeign   = errors.New("not an svcd snapshot file (wrong magic)")
	ErrTruncated = errors.New("snapshot file is truncated")
	ErrChecksum  = errors.New("snapshot file checksum mismatch (the file is corrupt)")
	ErrTooLarge  = errors.New("snapshot payload is larger than allowed")
)

// Write writes h and the payload read from payload (exactly h.PayloadBytes
// bytes) to w, followed by the checksum.
func Write(w io.Writer, h Header, payload io.Reader) error {
	h.FormatVersion = FormatVersion
	hb, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode snapshot header: %w", err)
	}
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
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
	_, err = w.Write(sum.Sum(nil))
	return err
}

// Read reads and checks a whole snapshot file from r: magic, format version,
// header, payload length, checksum and nothing after it. maxPayload bounds
// the payload it will hold in memory.
func Read(r io.Reader, maxPayload int64) (Header, []byte, error) {
	var h Header
	sum := sha256.New()
	tr := io.TeeReader(r, sum)
	lead := make([]byte, len(Magic)+4)
	if _, err := io.ReadFull(tr, lead); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if !bytes.HasPrefix([]byte(Magic), lead[:min(len(lead), len(Magic))]) {
				return h, nil, ErrForeign
			}
			return h, nil, ErrTruncated
		}
		return h, nil, err
	}
	if string(lead[:len(Magic)]) != Magic {
		return h, nil, ErrForeign
	}
	hl := binary.BigEndian.Uint32(lead[len(Magic):])
	if hl == 0 || hl > maxHeader {
		return h, nil, fmt.Errorf("snapshot header length %d out of range (1..%d)", hl, maxHeader)
	}
	hb := make([]byte, hl)
	if _, err := io.ReadFull(tr, hb); err != nil {
		return h, nil, truncated(err)
	}
	// The header is read before the checksum can be checked: its fields are
	// only trusted once the checksum over the whole file matched.
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, nil, fmt.Errorf("snapshot header is not valid: %v", err)
	}
	if h.FormatVersion < 1 {
		return Header{}, nil, fmt.Errorf("snapshot format version %d is not valid", h.FormatVersion)
	}
	if h.FormatVersion > FormatVersion {
		return Header{}, nil, fmt.Errorf("snapshot format version %d is newer than this svcd knows (%d): restore it with a newer svcd", h.FormatVersion, FormatVersion)
	}
	if h.PayloadBytes < 0 {
		return Header{}, nil, fmt.Errorf("snapshot payload length %d is not valid", h.PayloadBytes)
	}
	if h.PayloadBytes > maxPayload {
		return Header{}, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, h.PayloadBytes, maxPayload)
	}
	payload := make([]byte, h.PayloadBytes)
	if _, err := io.ReadFull(tr, payload); err != nil {
		return Header{}, nil, truncated(err)
	}
	want := sum.Sum(nil)
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, got); err != nil {
		return Header{}, nil, truncated(err)
	}
	if !bytes.Equal(got, want) {
		return Header{}, nil, ErrChecksum
	}
	var extra [1]byte
	if n, _ := io.ReadFull(r, extra[:]); n > 0 {
		return Header{}, nil, errors.New("snapshot file has data after its checksum (the file is corrupt)")
	}
	return h, payload, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}
