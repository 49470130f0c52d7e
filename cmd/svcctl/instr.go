package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

const instrUsage = "instr run [-file F] [-json] < reply.md   run the ```instr blocks of an AI reply and print the report"

// runInstr sends a reply to POST /v1/instructions/run with the caller's
// token and prints the report (or the whole JSON answer with -json). The exit
// code is 1 when any instruction failed.
func runInstr(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return usageError("usage: " + instrUsage)
	}
	fs := newFlags("instr run")
	file := fs.String("file", "", "read the reply from this file instead of stdin")
	asJSON := fs.Bool("json", c.format == formatJSON, "print the whole JSON answer (as -format=json)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError(flagHint(fs, err) + "usage: svcctl " + instrUsage)
	}
	if *asJSON {
		c.format = formatJSON
	}
	var in io.Reader = os.Stdin
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	text, err := io.ReadAll(io.LimitReader(in, 8<<20))
	if err != nil {
		return err
	}
	out := c.out
	var buf bytes.Buffer
	c.out = &buf // call prints the JSON; keep it unless -json
	raw, err := c.call(ctx, "POST", "/v1/instructions/run", map[string]string{"text": string(text)}, true)
	c.out = out
	if err != nil || *asJSON {
		_, _ = out.Write(buf.Bytes())
		return err
	}
	var env struct {
		Data struct {
			Report  string `json:"report"`
			Results []struct {
				OK bool `json:"ok"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	fmt.Fprint(out, env.Data.Report)
	for _, r := range env.Data.Results {
		if !r.OK {
			return fmt.Errorf("some instructions failed")
		}
	}
	return nil
}
