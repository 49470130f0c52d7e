package main

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
)

// The store zip's manifest lint (issue 36): what the extension asks for at
// install (permissions, host_permissions, the manifest's content_scripts)
// may name the daemon's loopback address and nothing else, and no
// webRequest among the required permissions. Every platform
// origin is an optional_host_permissions grant the user gives in the
// options page; <all_urls> or any other host in the required lists would
// install the extension with "read and change all your data" again.
//
//	distpack manifestlint EXTENSION.zip

func runManifestLint(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: distpack manifestlint EXTENSION.zip")
	}
	zr, err := zip.OpenReader(args[0])
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "manifest.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		if err != nil {
			return err
		}
		if err := lintManifest(data); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return nil
	}
	return fmt.Errorf("%s: no manifest.json at the zip's top", args[0])
}

// manifestAsks is the part of an MV3 manifest granted at install.
type manifestAsks struct {
	Permissions     []string `json:"permissions"`
	HostPermissions []string `json:"host_permissions"`
	ContentScripts  []struct {
		Matches []string `json:"matches"`
	} `json:"content_scripts"`
}

// matchPattern splits a Chrome match pattern: scheme, host (port cut).
var matchPattern = regexp.MustCompile(`^(\*|https?|wss?|file|ftp|urn):\/\/([^/]*)\/.*$`)

// lintManifest names every required grant of the manifest that is not the
// loopback address, or says why the manifest cannot be read.
func lintManifest(data []byte) error {
	var m manifestAsks
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	var bad []string
	for _, p := range m.Permissions {
		// MV3 takes hosts in host_permissions only; a pattern here is a
		// host grant all the same.
		if p == "<all_urls>" || strings.Contains(p, "://") {
			bad = append(bad, fmt.Sprintf("permissions holds %q", p))
		}
		// Held at all, webRequest makes Chromium route every page's
		// requests through the browser process (+0.5-1 ms each, issue 36):
		// it is the network capture's optional permission only.
		if p == "webRequest" || p == "webRequestBlocking" {
			bad = append(bad, fmt.Sprintf("permissions holds %q (every page pays for it: optional_permissions only)", p))
		}
	}
	for _, p := range m.HostPermissions {
		if !loopbackPattern(p) {
			bad = append(bad, fmt.Sprintf("host_permissions holds %q (not the loopback address)", p))
		}
	}
	for i, cs := range m.ContentScripts {
		for _, p := range cs.Matches {
			if !loopbackPattern(p) {
				bad = append(bad, fmt.Sprintf("content_scripts[%d].matches holds %q (register it for granted origins instead)", i, p))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the extension would ask at install for more than the daemon's loopback address: %s", strings.Join(bad, "; "))
	}
	return nil
}

// loopbackPattern: an http(s) or ws(s) pattern whose host is 127.0.0.0/8,
// ::1 or localhost (any port).
func loopbackPattern(p string) bool {
	m := matchPattern.FindStringSubmatch(p)
	if m == nil || m[1] == "*" || m[1] == "file" || m[1] == "ftp" || m[1] == "urn" {
		return false
	}
	host := m[2]
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 {
			return false
		}
		if rest := host[end+1:]; rest != "" && !validPort(rest) {
			return false
		}
		host = host[1:end]
	} else if i := strings.LastIndex(host, ":"); i >= 0 {
		if !validPort(host[i:]) {
			return false
		}
		host = host[:i]
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// portSuffix is ":" and 1-5 digits.
var portSuffix = regexp.MustCompile(`^:[0-9]{1,5}$`)

// validPort is ":*" or a port number.
func validPort(s string) bool {
	return s == ":*" || portSuffix.MatchString(s)
}
