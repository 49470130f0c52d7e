package workermgr

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base, max := 50*time.Millisecond, time.Second
	want := []time.Duration{50, 100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := backoff(i+1, base, max); got != w*time.Millisecond {
			t.Errorf("attempt %d: %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
	if got := backoff(500, base, max); got != max {
		t.Fatalf("attempt 500 (overflow): %s", got)
	}
}

func TestCrashWindow(t *testing.T) {
	var c crashWindow
	t0 := time.Unix(1000, 0)
	if n := c.add(t0, time.Minute); n != 1 {
		t.Fatal(n)
	}
	if n := c.add(t0.Add(30*time.Second), time.Minute); n != 2 {
		t.Fatal(n)
	}
	// The first exit has left the window.
	if n := c.add(t0.Add(61*time.Second), time.Minute); n != 2 {
		t.Fatal(n)
	}
	c.reset()
	if n := c.add(t0.Add(62*time.Second), time.Minute); n != 1 {
		t.Fatal(n)
	}
}

func TestNilManagerLease(t *testing.T) {
	var m *Manager
	if _, err := m.Lease(t.Context(), "hostops"); err != ErrNoWorkers {
		t.Fatalf("nil manager: %v", err)
	}
}
