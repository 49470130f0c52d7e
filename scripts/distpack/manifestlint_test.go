package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedExtensionZipPassesLint packs extension/ as scripts/dist does
// and lints the zip's manifest: the store zip asks at install for the
// daemon's loopback address only. (On the manifest before issue 36, which
// held <all_urls>, this fails.)
func TestShippedExtensionZipPassesLint(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	out := filepath.Join(t.TempDir(), "ext.zip")
	if err := runZip([]string{"-o", out, "-exclude", "test", filepath.Join("..", "..", "extension")}); err != nil {
		t.Fatal(err)
	}
	if err := runManifestLint([]string{out}); err != nil {
		t.Fatal(err)
	}
}

// TestManifestLintRefuses: every way a manifest can ask for more at install.
func TestManifestLintRefuses(t *testing.T) {
	for _, c := range []struct{ name, manifest, want string }{
		{"all_urls host", `{"host_permissions":["<all_urls>"]}`, `"<all_urls>"`},
		{"any host", `{"host_permissions":["*://*/*"]}`, `"*://*/*"`},
		{"a platform", `{"host_permissions":["http://127.0.0.1/*","https://chat.example.com/*"]}`, "chat.example.com"},
		{"content script everywhere", `{"content_scripts":[{"matches":["<all_urls>"],"js":["c.js"]}]}`, "content_scripts[0]"},
		{"content script on a platform", `{"content_scripts":[{"matches":["https://*.example.com/*"]}]}`, "example.com"},
		{"host in permissions", `{"permissions":["storage","<all_urls>"]}`, "permissions holds"},
		{"pattern in permissions", `{"permissions":["http://127.0.0.1/*"]}`, "permissions holds"},
		{"look-alike host", `{"host_permissions":["http://127.0.0.1.example.com/*"]}`, "127.0.0.1.example.com"},
		{"any scheme loopback", `{"host_permissions":["*://127.0.0.1/*"]}`, "*://127.0.0.1"},
		{"file", `{"host_permissions":["file:///*"]}`, "file"},
		{"bad port", `{"host_permissions":["http://localhost:abc/*"]}`, "localhost:abc"},
		{"webRequest required", `{"permissions":["storage","webRequest"]}`, `"webRequest"`},
		{"webRequestBlocking required", `{"permissions":["webRequestBlocking"]}`, `"webRequestBlocking"`},
		{"not json", `{"host_permissions":`, "manifest.json"},
		{"wrong type", `{"host_permissions":"<all_urls>"}`, "manifest.json"},
	} {
		err := lintManifest([]byte(c.manifest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
	for _, ok := range []string{
		`{"permissions":["storage","tabs"],"host_permissions":["http://127.0.0.1/*"],"optional_host_permissions":["*://*/*"]}`,
		`{"permissions":["storage"],"optional_permissions":["webRequest"]}`,
		`{"host_permissions":["http://localhost:4317/*","ws://[::1]:4317/*","https://127.0.0.2:*/*"]}`,
		`{}`,
	} {
		if err := lintManifest([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestManifestLintZipWithoutManifest: a zip without a manifest is refused.
func TestManifestLintZipWithoutManifest(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.js"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x.zip")
	if err := runZip([]string{"-o", out, dir}); err != nil {
		t.Fatal(err)
	}
	if err := runManifestLint([]string{out}); err == nil || !strings.Contains(err.Error(), "no manifest.json") {
		t.Fatalf("zip without manifest: %v", err)
	}
}

// FuzzManifestLint: any bytes are read without a panic, and a manifest the
// lint passes grants no host outside the loopback address.
func FuzzManifestLint(f *testing.F) {
	for _, s := range []string{
		`{"host_permissions":["http://127.0.0.1/*"]}`,
		`{"host_permissions":["<all_urls>"],"content_scripts":[{"matches":["<all_urls>"]}]}`,
		`{"host_permissions":["http://[::1/*"]}`,
		`{"permissions":["storage"],"host_permissions":["ws://localhost:*/*"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if lintManifest(data) != nil {
			return
		}
		// Passed: every required host, read again by encoding/json, is
		// neither a wildcard nor <all_urls>.
		var m manifestAsks
		if json.Unmarshal(data, &m) != nil {
			t.Fatalf("lint passed a manifest encoding/json refuses: %q", data)
		}
		required := append([]string{}, m.HostPermissions...)
		for _, cs := range m.ContentScripts {
			required = append(required, cs.Matches...)
		}
		for _, p := range append(required, m.Permissions...) {
			if p == "<all_urls>" || strings.HasPrefix(p, "*://") || strings.Contains(p, "://*") {
				t.Fatalf("lint passed %q in %q", p, data)
			}
		}
	})
}
