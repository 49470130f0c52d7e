package supervisor

import (
	"testing"

	"github.com/svcd/svcd/shared/guard"
)

// The daemon's requests to itself carry a Host its own guard accepts, for
// every listen address, the unspecified ones included.
func TestSelfHostIsAcceptedByTheGuard(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:4317": "127.0.0.1:4317",
		"0.0.0.0:4317":   "127.0.0.1:4317",
		"[::]:4317":      "127.0.0.1:4317",
		":4317":          "127.0.0.1:4317",
		"[::1]:4317":     "[::1]:4317",
		"10.1.2.3:4317":  "10.1.2.3:4317",
	} {
		got := selfHost(listen)
		if got != want {
			t.Errorf("selfHost(%q) = %q, want %q", listen, got, want)
		}
		if !guard.New(listen, nil, nil).HostAllowed(got) {
			t.Errorf("listen %q: the guard refuses Host %q", listen, got)
		}
	}
}

func TestPairingWSHostNamesAMachine(t *testing.T) {
	cases := []struct{ listen, host, want string }{
		{"127.0.0.1:8787", "localhost:8787", "127.0.0.1:8787"},
		{"0.0.0.0:8787", "10.1.2.3:8787", "10.1.2.3:8787"},
		{"[::]:8787", "[fd00::1]:8787", "[fd00::1]:8787"},
		{":8787", "host.example:8787", "host.example:8787"},
		{"0.0.0.0:8787", "", "0.0.0.0:8787"},
	}
	for _, c := range cases {
		if got := pairingWSHost(c.listen, c.host); got != c.want {
			t.Errorf("pairingWSHost(%q, %q) = %q, want %q", c.listen, c.host, got, c.want)
		}
	}
}
