package raftstore

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"
	"time"
)

// FuzzCommandSequences applies a short sequence of arbitrary commands (any
// type the FSM knows, any payload) to a fresh state, as a log replayed on a
// node would. For every command: the FSM never panics; a refused command
// leaves the whole state byte-for-byte as it was (a refusal has no half
// effects, so every node stays identical); and after every accepted one a
// conversation has at most one open (pending or running) renewal job.
//
// The input is split on NUL bytes into at most 8 commands; the first byte of
// each picks the command type, the rest is its JSON payload.
func FuzzCommandSequences(f *testing.F) {
	all := handlers()
	types := make([]string, 0, len(all))
	for t := range all {
		types = append(types, t)
	}
	sort.Strings(types)
	index := map[string]byte{}
	for i, t := range types {
		index[t] = byte(i)
	}
	seq := func(cmds ...[2]string) []byte {
		var parts [][]byte
		for _, c := range cmds {
			parts = append(parts, append([]byte{index[c[0]]}, c[1]...))
		}
		return bytes.Join(parts, []byte{0})
	}
	link := [2]string{CmdConvLink, `{"local_conversation_id":"c1","platform":"platform_a","client_id":"cl","remote_conversation_id":"r1"}`}
	auto := [2]string{CmdConvAutomation, `{"local_conversation_id":"c1","automation_status":"auto"}`}
	create := [2]string{CmdJobCreate, `{"local_conversation_id":"c1","message":"go on","due_at":"2026-01-02T03:04:05Z"}`}
	start := [2]string{CmdJobStart, `{"job_id":"job-1"}`}
	f.Add(seq(link, auto, create, start, [2]string{CmdJobFinish, `{"job_id":"job-1","ok":false,"error":"x","max_failures":1,"max_renewals":5,"pause_on_limit":true}`}))
	f.Add(seq(link, auto, create, create, start, start, [2]string{CmdJobRecover, `{}`}))
	f.Add(seq(link, [2]string{CmdConvMessage, `{"local_conversation_id":"c1","message_id":"m1"}`}, [2]string{CmdConvMessage, `{"local_conversation_id":"c1","message_id":"m1"}`}))
	f.Add(seq([2]string{CmdTaskStart, `{"kind":"instruction","title":"t"}`}, [2]string{CmdTaskLog, `{"task_id":"task-1","run_id":"run-1-1","lines":["a","b"]}`},
		[2]string{CmdTaskFinish, `{"task_id":"task-1","run_id":"run-1-1","status":"done"}`}))
	f.Add(seq([2]string{CmdSetSystemMode, `{"mode":"paused","requested_by":"t"}`}, [2]string{CmdTickRecord, `{"skipped_system_paused":true}`}))
	f.Add(seq([2]string{CmdBrowserClient, `{"client_id":"cl","connected":true}`}, [2]string{CmdBrowserSweep, `{}`}))
	f.Add(seq(link, [2]string{CmdConvAutomation, `{"local_conversation_id":"c1","automation_status":"paused","pause_reason":"r"}`},
		[2]string{CmdConvAutomation, `{"local_conversation_id":"c1","resume":true}`}, [2]string{CmdConvRecover, `{}`}))
	f.Add(seq([2]string{CmdPairRefusals, `{"total":{"count":2,"last_code":"credential_invalid","last_at":"2026-01-02T03:04:05Z"},"buckets":[{"key":"client:c1","count":2},{"key":"remote:127.0.0.1","count":2}]}`},
		[2]string{CmdPairRefusals, `{"total":{"count":1},"buckets":[{"key":"nobody","count":1}]}`}))
	// A lost runner's batch ended by a recovery, then its late finish.
	f.Add(seq([2]string{CmdTaskStart, `{"kind":"instruction_batch","title":"t","runner":"n1/a","local_conversation_id":"c1"}`},
		[2]string{CmdTaskStart, `{"kind":"instruction_batch","title":"u","runner":"n1/b"}`},
		[2]string{CmdTaskRecover, `{"live":["n1/b"]}`}, [2]string{CmdTaskRecover, `{"live":[]}`},
		[2]string{CmdTaskFinish, `{"task_id":"task-1","run_id":"run-1-1","status":"done"}`}))
	// The reaper's way: a new leader keeps the held conversation, the
	// reaper ends the named task and releases it; both ways at once is
	// refused.
	f.Add(seq(link, [2]string{CmdConvExecution, `{"local_conversation_id":"c1","platform":"platform_a","remote_conversation_id":"r1","state":"instruction_running"}`},
		[2]string{CmdTaskStart, `{"kind":"instruction_batch","title":"t","runner":"n1/a","local_conversation_id":"c1"}`},
		[2]string{CmdConvRecover, `{"keep_batches":true}`}, [2]string{CmdTaskRecover, `{"live":["x"],"tasks":["task-1"]}`},
		[2]string{CmdTaskRecover, `{"tasks":["task-1","task-9"]}`}))
	// Issue 34: a code redeemed with an unkeyed credential hash, re-keyed,
	// then revoked (the revocation is remembered).
	f.Add(seq([2]string{CmdPairCode, `{"hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","scopes":["bridge"],"expires_at":"2026-01-02T04:04:05Z"}`},
		[2]string{CmdPairRedeem, `{"code_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","client_id":"c1","cred_hash":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}`},
		[2]string{CmdPairRekey, `{"client_id":"c1","old_hash":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","new_hash":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"}`},
		[2]string{CmdPairRevoke, `{"client_id":"c1"}`}))
	f.Add([]byte{0xff, '[', 0, 0})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newState()
		for i, op := range bytes.SplitN(data, []byte{0}, 8) {
			if len(op) == 0 {
				continue
			}
			typ := types[int(op[0])%len(types)]
			before, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			c := Command{Type: typ, At: at.Add(time.Duration(i) * time.Second), Payload: json.RawMessage(op[1:])}
			_, err = all[typ](s, c)
			after, _ := json.Marshal(s)
			if err != nil {
				if !bytes.Equal(before, after) {
					t.Fatalf("%s %q refused (%v) but changed the state:\n%s\n%s", typ, op[1:], err, before, after)
				}
				continue
			}
			if err := checkIndexes(s, true); err != nil {
				t.Fatalf("after %s %q: %v", typ, op[1:], err)
			}
			open := map[string]string{}
			for id, j := range s.Jobs.ByID {
				if j.Status != JobPending && j.Status != JobRunning {
					continue
				}
				if other, ok := open[j.LocalID]; ok {
					t.Fatalf("after %s %q conversation %q has two open jobs: %s and %s", typ, op[1:], j.LocalID, other, id)
				}
				open[j.LocalID] = id
			}
		}
	})
}
