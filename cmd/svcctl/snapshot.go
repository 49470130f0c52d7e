package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/svcd/svcd/raftstore/snapfile"
)

const snapshotUsage = "snapshot save FILE | restore [-force] FILE   back up the raft state into FILE, or replace the state with FILE (token; -force: a snapshot of another cluster)"

// snapshotMediaType matches supervisor.SnapshotMediaType (svcctl does not
// import the supervisor).
const snapshotMediaType = "application/vnd.svcd.snapshot"

// maxSnapshotFile bounds what svcctl reads back to check a saved file.
const maxSnapshotFile = 256 << 20

func runSnapshot(ctx context.Context, c *client, args []string) error {
	if len(args) == 3 && args[0] == "restore" && (args[1] == "-force" || args[1] == "--force") {
		return snapshotRestore(ctx, c, args[2], true)
	}
	if len(args) != 2 || (args[0] != "save" && args[0] != "restore") {
		return usageError("usage: svcctl " + snapshotUsage)
	}
	if args[0] == "save" {
		return snapshotSave(ctx, c, args[1])
	}
	return snapshotRestore(ctx, c, args[1], false)
}

// snapshotSave streams GET /v1/snapshot into a temporary file beside FILE,
// checks it whole (checksum, length) and only then renames it to FILE, so
// FILE is never a partial snapshot.
func snapshotSave(ctx context.Context, c *client, path string) error {
	t, err := c.bearer()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/snapshot", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		c.print(raw)
		return fmt.Errorf("GET /v1/snapshot: %s", resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".svcd-snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("receive snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return err
	}
	h, _, err := snapfile.Read(tmp, maxSnapshotFile)
	tmp.Close()
	if err != nil {
		return fmt.Errorf("the snapshot received is not whole, %s not written: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The daemon's envelope shape, so that people get key: value lines
	// as from restore, and -format=json the same kind of document.
	b, _ := json.Marshal(map[string]any{"ok": true, "data": map[string]any{"file": path, "header": h}})
	c.print(b)
	return nil
}

// snapshotRestore checks FILE here first (a bad file is refused without a
// request), then posts it to POST /v1/snapshot/restore (force=true with
// -force: a snapshot of another cluster is taken too).
func snapshotRestore(ctx context.Context, c *client, path string, force bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, _, err := snapfile.Read(bytes.NewReader(raw), maxSnapshotFile); err != nil {
		return fmt.Errorf("%s refused, nothing sent: %w", path, err)
	}
	t, err := c.bearer()
	if err != nil {
		return err
	}
	url := c.base + "/v1/snapshot/restore"
	if force {
		url += "?force=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t)
	req.Header.Set("Content-Type", snapshotMediaType)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return c.failure(http.MethodPost, "/v1/snapshot/restore", resp, body)
	}
	c.print(body)
	return nil
}
