package raftstore

import (
	"encoding/json"
	"testing"
	"time"
)

// A proposal encodes to exactly the bytes of the Command it stands for, so
// logs written before and after it decode the same way.
func TestProposalEncodesLikeCommand(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 123, time.UTC)
	payload := SetSystemMode{Mode: ModePaused, RequestedBy: "<ops & co>", Reason: "a \"quoted\" reason\u2028"}
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(Command{Type: CmdSetSystemMode, At: at, Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(proposal{Type: CmdSetSystemMode, At: at, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("proposal %s\ncommand  %s", got, want)
	}
}
