package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"unicode/utf8"
)

// Host operations need the bearer token (-token, SVC_SHARED_TOKEN or the
// default daemon's token file). The JSON answer is printed; the exit code is
// 1 when data.ok is false, so scripts can test it.

func runFiles(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 {
		return usageError("files needs read or write")
	}
	switch args[0] {
	case "read":
		return runFilesRead(ctx, c, args[1:])
	case "write":
		return runFilesWrite(ctx, c, args[1:])
	}
	return usageError("files: unknown action " + args[0] + "; want read or write")
}

func runFilesRead(ctx context.Context, c *client, args []string) error {
	fs := newFlags("files read")
	fs.StringVar(&c.format, "format", c.format, "output: human or json (the raw envelope)")
	cwd := fs.String("cwd", "", "folder a relative PATH is resolved against")
	b64 := fs.Bool("base64", false, "return the content as base64 (for binary files)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return usageError(flagHint(fs, err) + "usage: svcctl files read [-cwd DIR] [-base64] PATH")
	}
	if c.format != formatHuman && c.format != formatJSON {
		return usageError("-format: want human or json")
	}
	body := map[string]any{"path": fs.Arg(0), "cwd": *cwd}
	if *b64 {
		body["encoding"] = "base64"
	}
	if c.format != formatJSON {
		return c.printFile(ctx, body)
	}
	raw, err := c.call(ctx, http.MethodPost, "/v1/files/read", body, true)
	if err != nil {
		return err
	}
	return outcome(raw)
}

// printFile is files read for people: the file's bytes on stdout as they
// are, like cat. It always asks for base64 so a binary file prints too.
func (c *client) printFile(ctx context.Context, body map[string]any) error {
	body["encoding"] = "base64"
	raw, resp, err := c.send(ctx, http.MethodPost, "/v1/files/read", body, true)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return c.failure(http.MethodPost, "/v1/files/read", resp, raw)
	}
	if err := outcome(raw); err != nil {
		return err
	}
	var env struct {
		Data struct {
			Result struct {
				Content  string `json:"content"`
				Encoding string `json:"encoding"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	r := env.Data.Result
	content := []byte(r.Content)
	if r.Encoding == "base64" {
		if content, err = base64.StdEncoding.DecodeString(r.Content); err != nil {
			return fmt.Errorf("the daemon's base64 content: %w", err)
		}
	}
	_, err = c.out.Write(content)
	return err
}

func runFilesWrite(ctx context.Context, c *client, args []string) error {
	fs := newFlags("files write")
	fs.StringVar(&c.format, "format", c.format, "output: human or json (the raw envelope)")
	cwd := fs.String("cwd", "", "folder a relative PATH is resolved against")
	noOverwrite := fs.Bool("no-overwrite", false, "fail instead of replacing an existing file")
	parents := fs.Bool("parents", false, "create missing folders")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError(flagHint(fs, err) + "usage: svcctl files write [-cwd DIR] [-no-overwrite] [-parents] PATH [CONTENT]   (no CONTENT or -: read standard input)")
	}
	var content []byte
	if fs.NArg() == 2 && fs.Arg(1) != "-" {
		content = []byte(fs.Arg(1))
	} else {
		var err error
		if content, err = io.ReadAll(os.Stdin); err != nil {
			return err
		}
	}
	body := map[string]any{"path": fs.Arg(0), "cwd": *cwd, "overwrite": !*noOverwrite, "createParents": *parents}
	// Binary input goes as base64 so it survives JSON unchanged.
	if !utf8.Valid(content) {
		body["content"], body["encoding"] = base64.StdEncoding.EncodeToString(content), "base64"
	} else {
		body["content"] = string(content)
	}
	raw, err := c.call(ctx, http.MethodPost, "/v1/files/write", body, true)
	if err != nil {
		return err
	}
	return outcome(raw)
}

// outcome turns data.ok false into an error (the body was printed already).
func outcome(raw []byte) error {
	var env struct {
		Data struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	if !env.Data.OK {
		if env.Data.Error == "" {
			env.Data.Error = "the operation failed (data.ok is false)"
		}
		return errors.New(env.Data.Error)
	}
	return nil
}
