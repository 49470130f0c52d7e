// Package pluginkit is what every svcd worker and the supervisor's worker
// manager share about go-plugin: the handshake, the gRPC-only client and
// server settings with raised message limits, and a spawner that forks
// children from one pinned OS thread so Pdeathsig means what it says.
package pluginkit

import (
	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is bumped when a worker's gRPC contract changes in a way an
// older supervisor could not speak. The binary re-executes itself, so both
// halves always come from the same build; the check guards against a stale
// binary replaced on disk between supervisor start and a worker restart.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake every svcd worker uses. The magic
// cookie is not a secret: it only stops a person from running
// `svcd worker hostops` by hand and staring at a handshake line.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "SVCD_WORKER_COOKIE",
		MagicCookieValue: "4f1c0d9e-svcd-worker-b7a2e6c35d81",
	}
}

// WorkerArgs is the command line, after the binary, that starts worker name.
func WorkerArgs(name string) []string { return []string{"worker", name} }
