// Command distpack makes the deterministic archives and licence notes of
// `make dist` (scripts/dist): the same inputs give byte-identical outputs,
// whatever the clock, umask, file owners or directory order of the machine.
//
//	distpack tar -o OUT.tar.gz -prefix NAME/ DIR      # gzip'd tar of DIR under NAME/
//	distpack zip -o OUT.zip [-exclude SUB]... DIR    # zip of DIR's files
//	distpack licenses -o DIR PACKAGE...               # third-party licence notes
//	distpack manifestlint EXTENSION.zip               # required grants: loopback only
//	distpack links DIR                                # relative doc links resolve inside DIR
//
// Every entry gets SOURCE_DATE_EPOCH as its time, owner 0:0 with no names,
// and mode 0755 (directories, executables) or 0644; entries are sorted.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: distpack tar|zip|licenses|manifestlint|links [flags] ARGS")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "tar":
		err = runTar(os.Args[2:])
	case "zip":
		err = runZip(os.Args[2:])
	case "licenses":
		err = runLicenses(os.Args[2:])
	case "manifestlint":
		err = runManifestLint(os.Args[2:])
	case "links":
		err = runLinks(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "distpack:", err)
		os.Exit(1)
	}
}

// epoch is SOURCE_DATE_EPOCH (the commit's time, set by scripts/dist).
func epoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want the commit time in Unix seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// entry is one file or directory of an archive, by its slash path.
type entry struct {
	name string
	dir  bool
	exec bool
	path string // on disk
}

// walk lists dir's entries sorted by name, skipping the excluded subtrees.
func walk(dir string, exclude []string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		for _, x := range exclude {
			if rel == x || strings.HasPrefix(rel, x+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !d.IsDir() && !info.Mode().IsRegular() {
			return fmt.Errorf("%s: only files and directories can be packed", p)
		}
		out = append(out, entry{name: rel, dir: d.IsDir(), exec: info.Mode()&0o111 != 0, path: p})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

func mode(e entry) int64 {
	if e.dir || e.exec {
		return 0o755
	}
	return 0o644
}

func runTar(args []string) error {
	fs := flag.NewFlagSet("tar", flag.ContinueOnError)
	out := fs.String("o", "", "output .tar.gz")
	prefix := fs.String("prefix", "", "directory name inside the archive, with a trailing slash")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 1 {
		return errors.New("tar -o OUT.tar.gz [-prefix NAME/] DIR")
	}
	t, err := epoch()
	if err != nil {
		return err
	}
	entries, err := walk(fs.Arg(0), nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	// No name, no time in the gzip header: only the bytes of the tar.
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	if *prefix != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: *prefix, Mode: 0o755, ModTime: t, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, e := range entries {
		h := &tar.Header{Name: *prefix + e.name, Mode: mode(e), ModTime: t, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runZip(args []string) error {
	fl := flag.NewFlagSet("zip", flag.ContinueOnError)
	out := fl.String("o", "", "output .zip")
	var exclude multiFlag
	fl.Var(&exclude, "exclude", "a path under DIR to leave out (repeatable)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || fl.NArg() != 1 {
		return errors.New("zip -o OUT.zip [-exclude SUB]... DIR")
	}
	t, err := epoch()
	if err != nil {
		return err
	}
	entries, err := walk(fl.Arg(0), exclude)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestCompression) })
	for _, e := range entries {
		if e.dir {
			continue // Chrome needs no directory entries; files carry their paths
		}
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		// Modified without the extended-timestamp field the zip package adds
		// for it: the MS-DOS time alone, in UTC, so the bytes do not depend on
		// the local time zone.
		h.ModifiedDate, h.ModifiedTime = dosDateTime(t)
		h.SetMode(fs.FileMode(mode(e)))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

// dosDateTime is t in the MS-DOS date and time fields of a zip header.
func dosDateTime(t time.Time) (date, tm uint16) {
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tm
}
