package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Found by the chaos run in network namespaces (docs/reliability.md): a
// daemon listening on every address (-listen 0.0.0.0:PORT) ran a plugin's
// instruction blocks with Host "0.0.0.0:PORT", which its own guard refuses,
// so every block a plugin sent failed. The node runs in a namespace of a
// NetLab (listening on 0.0.0.0 there reaches nothing outside the lab); the
// plugin reaches it over the client link; its exec block writes a file.
func TestPluginInstructionBlocksRunWhenListeningOnEveryAddress(t *testing.T) {
	l := harness.NewNetLab(t)
	cfg := filepath.Join(t.TempDir(), "lab.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("browser_allowed_peers = [%q]\n", l.RootIP(1))), 0o600); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir() // the block writes here: a write root of its commands
	d := harness.Start(t, harness.Options{Addr: l.ClientIP(1) + ":4317", Prefix: l.Exec(1), Env: []string{"SVC_EXEC_WRITE_ROOTS=" + outDir},
		Args: []string{"-config", cfg, "-listen", "0.0.0.0:4317", "-allowed-hosts", l.ClientIP(1)}})
	p := connectPlugin(t, d, "any-addr", nil)
	ref := bridgeproto.ConversationRef{Platform: bridgeproto.PlatformA, LocalConversationID: "conv-any", RemoteConversationID: "r-conv-any"}
	if err := p.Send(bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: ref}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outDir, "ran")
	text := block("@svc::exec::echo ran > " + out)
	if err := p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, ConversationRef: ref, MessageID: "m-any", Text: text}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the plugin's block to run", func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == "ran\n"
	})
}
