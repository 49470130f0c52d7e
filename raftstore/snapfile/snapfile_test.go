package snapfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func sample(t testing.TB) []byte {
	t.Helper()
	payload := []byte(`{"system":{"mode":"paused","version":7}}`)
	var buf bytes.Buffer
	h := Header{ClusterID: "c0ffee", NodeID: "node1", Index: 42, Term: 3, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), PayloadBytes: int64(len(payload))}
	if err := Write(&buf, h, bytes.NewReader(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	h, payload, err := Read(bytes.NewReader(sample(t)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if h.FormatVersion != FormatVersion || h.Index != 42 || h.Term != 3 || h.ClusterID != "c0ffee" || !strings.Contains(string(payload), `"paused"`) {
		t.Fatalf("read back %+v %q", h, payload)
	}
}

// Every single flipped byte and every truncation is refused.
func TestEveryFlipAndTruncationRefused(t *testing.T) {
	file := sample(t)
	for i := range file {
		bad := bytes.Clone(file)
		bad[i] ^= 0x01
		if _, _, err := Read(bytes.NewReader(bad), 1<<20); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
	for n := 0; n < len(file); n++ {
		_, _, err := Read(bytes.NewReader(file[:n]), 1<<20)
		if err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
		if n >= len(Magic) && !errors.Is(err, ErrTruncated) && !strings.Contains(err.Error(), "header") {
			t.Fatalf("truncated to %d: %v, want ErrTruncated", n, err)
		}
	}
	if _, _, err := Read(bytes.NewReader(append(bytes.Clone(file), 'x')), 1<<20); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestForeignAndNewerRefused(t *testing.T) {
	for _, in := range []string{"", "hello world, not a snapshot", "PK\x03\x04zipfile"} {
		if _, _, err := Read(strings.NewReader(in), 1<<20); !errors.Is(err, ErrForeign) {
			t.Fatalf("%q: %v, want ErrForeign", in, err)
		}
	}
	newer := bytes.Replace(sample(t), []byte(`"format_version":1`), []byte(`"format_version":9`), 1)
	_, _, err := Read(bytes.NewReader(newer), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "format version 9 is newer than this svcd knows (1)") {
		t.Fatalf("newer format: %v", err)
	}
	if _, _, err := Read(bytes.NewReader(sample(t)), 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the payload cap: %v", err)
	}
}

// FuzzRead: no input panics, and whatever Read accepts writes back to the
// same bytes (so an accepted file is exactly what Write made).
func FuzzRead(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte(Magic))
	f.Add([]byte("not a snapshot"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, payload, err := Read(bytes.NewReader(in), 1<<20)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, h, bytes.NewReader(payload)); err != nil {
			t.Fatalf("accepted file does not write back: %v", err)
		}
		h2, p2, err := Read(bytes.NewReader(out.Bytes()), 1<<20)
		if err != nil || h2 != h || !bytes.Equal(p2, payload) {
			t.Fatalf("round trip of an accepted file changed it: %v", err)
		}
	})
}
