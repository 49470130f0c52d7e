package snapfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// testKey is the snapshot MAC key of the tests.
var testKey = []byte("snapshot-test-key")

func sample(t testing.TB) []byte { return sampleKeyed(t, testKey) }

// sampleKeyed writes a sample file with key (nil: format 1).
func sampleKeyed(t testing.TB, key []byte) []byte {
	t.Helper()
	payload := []byte(`{"system":{"mode":"paused","version":7}}`)
	var buf bytes.Buffer
	h := Header{ClusterID: "c0ffee", NodeID: "node1", Index: 42, Term: 3, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), PayloadBytes: int64(len(payload))}
	if err := Write(&buf, h, bytes.NewReader(payload), key); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Format 2 is authenticated: the right key reads it (authenticated), another
// key or an edit with a recomputed checksum is ErrTampered; format 1 reads
// as not authenticated.
func TestAuthenticated(t *testing.T) {
	file := sample(t)
	if h, _, ok, err := ReadAuth(bytes.NewReader(file), 1<<20, testKey); err != nil || !ok || h.FormatVersion != 2 || h.Auth != AuthHMAC {
		t.Fatalf("right key: %+v %v %v", h, ok, err)
	}
	if _, _, _, err := ReadAuth(bytes.NewReader(file), 1<<20, []byte("other")); !errors.Is(err, ErrTampered) {
		t.Fatalf("other key: %v", err)
	}
	// An edit with a recomputed checksum (the old attack): the MAC still
	// refuses it.
	h, payload, err := Read(bytes.NewReader(file), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(payload, []byte("paused"), []byte("runnin"), 1)
	var buf bytes.Buffer
	_ = Write(&buf, h, bytes.NewReader(edited), []byte("attacker's guess"))
	if _, _, _, err := ReadAuth(bytes.NewReader(buf.Bytes()), 1<<20, testKey); !errors.Is(err, ErrTampered) {
		t.Fatalf("edited file: %v", err)
	}
	old := sampleKeyed(t, nil)
	if h, _, ok, err := ReadAuth(bytes.NewReader(old), 1<<20, testKey); err != nil || ok || h.FormatVersion != 1 {
		t.Fatalf("format 1: %+v %v %v", h, ok, err)
	}
	// A format-2 header without its MAC (a downgrade by hand) is refused.
	if _, _, err := Read(bytes.NewReader(bytes.Replace(old, []byte(`"format_version":1`), []byte(`"format_version":2`), 1)), 1<<20); err == nil {
		t.Fatal("format 2 without auth accepted")
	}
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
		if _, _, _, err := ReadAuth(bytes.NewReader(bad), 1<<20, testKey); err == nil {
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
	newer := bytes.Replace(sample(t), []byte(`"format_version":2`), []byte(`"format_version":9`), 1)
	_, _, err := Read(bytes.NewReader(newer), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "format version 9 is newer than this svcd knows (2)") {
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
	f.Add(sampleKeyed(f, nil))
	f.Add([]byte(Magic))
	f.Add([]byte("not a snapshot"))
	f.Fuzz(func(t *testing.T, in []byte) {
		// ReadAuth never accepts what Read refuses, nor a format-2 file
		// whose MAC is not the test key's.
		ha, _, authed, aerr := ReadAuth(bytes.NewReader(in), 1<<20, testKey)
		h, payload, err := Read(bytes.NewReader(in), 1<<20)
		if err != nil {
			if aerr == nil {
				t.Fatalf("ReadAuth accepted what Read refused: %v", err)
			}
			return
		}
		if aerr == nil && authed != (ha.Auth == AuthHMAC) {
			t.Fatalf("authenticated %v for auth %q", authed, ha.Auth)
		}
		var key []byte
		if h.Auth == AuthHMAC {
			key = testKey
		}
		var out bytes.Buffer
		if err := Write(&out, h, bytes.NewReader(payload), key); err != nil {
			t.Fatalf("accepted file does not write back: %v", err)
		}
		h2, p2, err := Read(bytes.NewReader(out.Bytes()), 1<<20)
		if err != nil || h2 != h || !bytes.Equal(p2, payload) {
			t.Fatalf("round trip of an accepted file changed it: %v", err)
		}
	})
}
