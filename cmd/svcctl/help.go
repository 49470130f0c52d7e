package main

import (
	"fmt"
	"io"
)

// commandHelp is `svcctl CMD -h`: what the command does, its flags and an
// example. exec prints its own (execHelp, from its flag set). Every
// command also takes the global flags (svcctl -h), -format among them.
var commandHelp = map[string]string{
	"status": `usage: svcctl status

The narrow status snapshot: mode, leader, queue, workers.

flags: none of its own; global: -addr, -format human|json, -token, -data-dir, -config

example:
  svcctl status
  svcctl -format=json status | jq .data.mode`,
	"system": `usage: svcctl system state
       svcctl system pause|resume|drain [--reason R] [--by WHO]

Read or switch the automation mode.

flags (pause, resume, drain):
  -reason R   why (shown in system state and the panel)
  -by WHO     who asks (default "svcctl")

example:
  svcctl system pause --reason "deploy" --by alice
  svcctl system state`,
	"files": `usage: svcctl files read [-cwd DIR] [-base64] PATH
       svcctl files write [-cwd DIR] [-no-overwrite] [-parents] PATH [CONTENT|-]

Read or write a file on the daemon's host (needs the shared token). read
prints the file's content; write takes CONTENT, or standard input when it is
missing or -.

flags (read):
  -cwd DIR         folder a relative PATH is resolved against
  -base64          ask for the content as base64 (for binary files)
flags (write):
  -cwd DIR         folder a relative PATH is resolved against
  -no-overwrite    fail instead of replacing an existing file
  -parents         create missing folders

example:
  svcctl files read /etc/hostname
  echo hello | svcctl files write -parents /tmp/demo/hello.txt`,
	"workers": `usage: svcctl workers
       svcctl workers restart NAME|all

List the worker processes (pid, state, restarts), or rolling-restart one or
all of them (needs the shared token).

flags: none of its own; global: -format human|json, -token, -data-dir

example:
  svcctl workers
  svcctl workers restart hostops`,
	"cluster": `usage: svcctl cluster [ls]
       svcctl cluster join ID RAFT_ADDR API_ADDR|-
       svcctl cluster remove ID

The cluster's members and roles; add or remove a node (join and remove need
the shared token).

flags: none of its own; global: -format human|json, -token

example:
  svcctl cluster
  svcctl cluster join node2 127.0.0.1:4400 127.0.0.1:4318`,
	"browser": `usage: svcctl ` + browserUsage + `

The browser read model, relayed requests and plugin actions, pairing codes
and paired clients (pair, revoke, grant need the shared token).

flags (ls):      -platform P -account A -browser B -client ID -host H -status fresh|stale|lost
flags (request): -platform P -path /x | -prompt T, -method M, -body JSON, -id ID, -client ID, -sse, -timeout-ms N
flags (action):  -platform P -client ID, then key=value arguments
flags (cancel):  -platform P -id ID
flags (pair):    -scope host-ops, -ttl 10m

request -sse prints one line per event: the time since the stream began, the
event's name, its fields as key=value (the request's ids on the first line
only); -format=json prints the Server-Sent Events as they came.

example:
  svcctl browser ls -status fresh
  svcctl browser request -platform platform_a -prompt "hello" -sse
  svcctl browser pair -ttl 5m`,
	"instr": `usage: svcctl instr run [-file F] [-json] < reply.md

Run the ` + "```instr" + ` blocks of an AI reply and print the report (needs the token).

flags:
  -file F   read the reply from F instead of standard input
  -json     print the whole JSON answer instead of the report

example:
  svcctl instr run -file reply.md`,
	"agent": `usage: svcctl ` + agentUsage + `

flags (create): -cwd DIR (the directory the agent works in), -purpose P, -resume ID
flags (turn):   -wait-ms N (wait up to N ms for the final text)

example:
  svcctl agent create -cwd /srv/app -purpose "fix the build"
  svcctl agent turn -wait-ms 60000 SESSION_ID "run the tests"`,
	"renewal": `usage: svcctl ` + renewalUsage + `

flags: none of its own; global: -format human|json

example:
  svcctl renewal ls
  svcctl renewal pause CONV_ID "on holiday"`,
	"tasks": `usage: svcctl ` + tasksUsage + `

flags: none of its own; global: -format human|json

example:
  svcctl tasks ls running
  svcctl tasks logs TASK_ID`,
	"controllers": `usage: svcctl controllers

The daemon nodes with the active leader hint.

flags: none of its own; global: -format human|json

example:
  svcctl controllers`,
	"version": `usage: svcctl version

svcctl's own version, commit, build date and Go version, then the daemon's
(GET /version). An unreachable daemon is a note, not a failure.

flags: none of its own; global: -addr

example:
  svcctl version`,
	"api": `usage: svcctl api

The OpenAPI 3.1 document of the daemon's routes.

flags: none of its own; global: -format human|json (json prints the document as is)

example:
  svcctl -format=json api > openapi.json`,
	"snapshot": `usage: svcctl ` + snapshotUsage + `

flags: none of its own; global: -token, -data-dir, -config (restore and save need the token)

example:
  svcctl snapshot save /backup/svcd-$(date +%F).snap
  svcctl snapshot restore /backup/svcd-2026-01-01.snap`,
}

// wantsHelp says the arguments ask for help: -h, -help or --help before
// any "--" (after it they belong to a remote command).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// printHelp writes `svcctl CMD -h`; false when CMD prints its own.
func printHelp(w io.Writer, name string) bool {
	h, ok := commandHelp[name]
	if !ok {
		return false
	}
	fmt.Fprintln(w, h)
	return true
}
