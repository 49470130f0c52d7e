package hostops

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"
)

// Encodings of file content on the wire.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// ReadFile reads a regular file up to the read cap. Under utf8 the bytes
// must be valid UTF-8 (the supervisor sends them as a JSON string); base64
// takes anything.
func (l *Local) ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error) {
	var res ReadResult
	fail := func(code, format string, args ...any) (ReadResult, error) {
		res.ErrorCode, res.Error = code, fmt.Sprintf(format, args...)
		return res, nil
	}
	p, err := l.now().paths.path(req.Cwd, req.Path)
	if err != nil {
		return fail(CodeIOError, "path: %v", err)
	}
	// Non-blocking, so that a FIFO or a device answers at once instead of
	// holding a worker thread in open(2); Stat below refuses it.
	var f *os.File
	p, err = l.now().paths.beneath(p, func(root *os.Root, rel string) (err error) {
		f, err = root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		return err
	})
	res.Info.Path = p
	switch {
	case errors.Is(err, errNotAllowed):
		return fail(CodePathNotAllowed, "%v", err)
	case errors.Is(err, fs.ErrNotExist):
		return fail(CodeNotFound, "%s does not exist", p)
	case err != nil:
		return fail(CodeIOError, "open %s: %v", p, pathErrText(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail(CodeIOError, "stat %s: %v", p, pathErrText(err))
	}
	res.Info = infoOf(p, st)
	switch {
	case st.IsDir():
		return fail(CodeIsDirectory, "%s is a directory", p)
	case !st.Mode().IsRegular():
		return fail(CodeNotRegular, "%s is not a regular file (%s)", p, st.Mode().Type())
	case st.Size() > l.now().cfg.ReadCap:
		return fail(CodeTooLarge, "%s is %d bytes, over the read cap of %d bytes", p, st.Size(), l.now().cfg.ReadCap)
	}
	// Read one byte past the cap: the file may have grown since Stat.
	content, err := io.ReadAll(io.LimitReader(f, l.now().cfg.ReadCap+1))
	if err != nil {
		return fail(CodeIOError, "read %s: %v", p, pathErrText(err))
	}
	if int64(len(content)) > l.now().cfg.ReadCap {
		return fail(CodeTooLarge, "%s grew past the read cap of %d bytes while being read", p, l.now().cfg.ReadCap)
	}
	res.Info.Size = int64(len(content))
	if req.Encoding != EncodingBase64 && !utf8.Valid(content) {
		return fail(CodeNotUTF8, "%s is not valid UTF-8 text; read it with \"encoding\":\"base64\"", p)
	}
	res.OK, res.Content = true, content
	return res, nil
}

// WriteFile replaces Path atomically: a temporary file in the same folder is
// written, fsynced, given the old file's mode (and owner, when allowed) and
// renamed over the target; then the folder is fsynced. A reader sees the old
// content or the new one, never a mix. With Overwrite false the temporary
// file is hard-linked into place instead, which fails if the target appeared
// in the meantime, so "do not overwrite" holds even under a race.
//
// Every step acts through one descriptor of the target's folder, opened
// beneath its root (beneath.go): a link flipped in a root while this runs
// cannot send the write, the rename or the owner change out of it.
func (l *Local) WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error) {
	var res WriteResult
	fail := func(code, format string, args ...any) (WriteResult, error) {
		res.ErrorCode, res.Error = code, fmt.Sprintf(format, args...)
		return res, nil
	}
	if int64(len(req.Content)) > l.now().cfg.WriteCap {
		return fail(CodeTooLarge, "content is %d bytes, over the write cap of %d bytes", len(req.Content), l.now().cfg.WriteCap)
	}
	p, err := l.now().paths.path(req.Cwd, req.Path)
	if err != nil {
		return fail(CodeIOError, "path: %v", err)
	}
	res.Info.Path = p
	tgt, code, err := l.writeTarget(p, req.CreateParents)
	if err != nil {
		return fail(code, "%v", err)
	}
	defer tgt.dir.Close()
	p, base, dir := tgt.path, tgt.base, tgt.dir
	res.Info.Path = p

	mode := fs.FileMode(0o644)
	uid, gid := -1, -1
	old, err := dir.Lstat(base)
	switch {
	case err == nil && old.IsDir():
		return fail(CodeIsDirectory, "%s is a directory", p)
	case err == nil && !old.Mode().IsRegular():
		return fail(CodeNotRegular, "%s is not a regular file (%s)", p, old.Mode().Type())
	case err == nil && !req.Overwrite:
		return fail(CodeExists, "%s exists and overwrite is false; the file was not touched", p)
	case err == nil:
		mode = old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if sys, ok := old.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fail(CodeIOError, "stat %s: %v", p, pathErrText(err))
	}
	res.Created = old == nil

	tmpName := "." + base + ".svcd-" + rand.Text()[:12] + ".tmp"
	tmp, err := dir.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(CodeIOError, "create temporary file in %s: %v", filepath.Dir(p), pathErrText(err))
	}
	committed := false
	defer func() {
		if !committed {
			dir.Remove(tmpName)
		}
	}()
	if err := writeAndSync(tmp, req.Content, mode, uid, gid); err != nil {
		return fail(CodeIOError, "write %s: %v", tmpName, pathErrText(err))
	}
	if req.Overwrite {
		// rename(2) replaces a link put there meanwhile, never its target.
		err = dir.Rename(tmpName, base)
	} else {
		err = dir.Link(tmpName, base)
		if errors.Is(err, fs.ErrExist) {
			return fail(CodeExists, "%s appeared while writing and overwrite is false; the file was not touched", p)
		}
		if err == nil {
			dir.Remove(tmpName)
		}
	}
	if err != nil {
		return fail(CodeIOError, "replace %s: %v", p, pathErrText(err))
	}
	committed = true
	syncDir(dir)
	if st, err := dir.Lstat(base); err == nil {
		res.Info = infoOf(p, st)
	}
	res.OK = true
	return res, nil
}

// writeTarget is where a write lands: the folder, open beneath its root,
// and the name in it, after following a symlink at the name to its target
// (a write goes through a link rather than replacing it).
type writeTarget struct {
	dir  *os.Root
	base string
	path string // the absolute path written
}

// maxLinkHops bounds the links a write follows (as the kernel's 40).
const maxLinkHops = 40

func (l *Local) writeTarget(p string, createParents bool) (writeTarget, string, error) {
	for range maxLinkHops {
		dirPath, base := filepath.Dir(p), filepath.Base(p)
		var dir *os.Root
		open := func(root *os.Root, rel string) (err error) {
			dir, err = openDirBeneath(root, rel)
			return err
		}
		placed, err := l.now().paths.beneath(dirPath, open)
		if errors.Is(err, fs.ErrNotExist) {
			if !createParents {
				return writeTarget{}, CodeParentNotFound, fmt.Errorf("folder %s does not exist; pass \"createParents\":true to create it", dirPath)
			}
			if _, err = l.now().paths.beneath(dirPath, func(root *os.Root, rel string) error { return root.MkdirAll(rel, 0o755) }); err == nil {
				placed, err = l.now().paths.beneath(dirPath, open)
			}
		}
		switch {
		case errors.Is(err, errNotAllowed):
			return writeTarget{}, CodePathNotAllowed, err
		case errors.Is(err, syscall.ENOTDIR):
			return writeTarget{}, CodeParentNotDirectory, fmt.Errorf("%s is not a folder", dirPath)
		case err != nil:
			return writeTarget{}, CodeIOError, fmt.Errorf("open folder %s: %v", dirPath, pathErrText(err))
		}
		st, err := dir.Lstat(base)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return writeTarget{dir: dir, base: base, path: filepath.Join(placed, base)}, "", nil
		}
		link, err := dir.Readlink(base)
		dir.Close()
		if err != nil {
			return writeTarget{}, CodeIOError, fmt.Errorf("read link %s: %v", p, pathErrText(err))
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(placed, link)
		}
		p = filepath.Clean(link)
	}
	return writeTarget{}, CodeIOError, fmt.Errorf("%s: too many levels of symbolic links", p)
}

func writeAndSync(f *os.File, content []byte, mode fs.FileMode, uid, gid int) error {
	_, err := f.Write(content)
	if err == nil && (uid >= 0 || gid >= 0) && os.Geteuid() == 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		// Chmod after Chown: chown clears setuid/setgid bits.
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes the rename durable. Failure is not reported: the content is
// in place either way, only its survival of a power cut is weaker.
func syncDir(dir *os.Root) {
	if d, err := dir.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func infoOf(p string, st fs.FileInfo) FileInfo {
	return FileInfo{Path: p, Size: st.Size(), Mode: uint32(st.Mode()), ModTime: st.ModTime().UTC()}
}

// pathErrText drops the repeated path from *fs.PathError messages.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
