package bridgeproto

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// messageIDCase is one row of testdata/message_ids.json, the table the
// extension's node tests check their copy of the rule against
// (extension/test/pagerules.test.mjs daemonAcceptsID): both sides must agree
// on every row.
type messageIDCase struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Accepted bool   `json:"accepted"`
}

// TestMessageIDTable: a conversation_message with each id of the shared
// table is accepted or refused (invalid_field on message_id) as the table says.
func TestMessageIDTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/message_ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []messageIDCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d rows in the table", len(cases))
	}
	for _, tc := range cases {
		frame, _ := json.Marshal(map[string]string{
			"type": "conversation_message", "platform": "platform_a",
			"local_conversation_id": "conv-1", "remote_conversation_id": "1",
			"message_id": tc.ID, "text": "hi", "role": "assistant",
		})
		_, err := Parse(frame)
		var pe *ParseError
		errors.As(err, &pe)
		switch {
		case tc.Accepted && err != nil:
			t.Errorf("%s: refused: %v", tc.Name, err)
		case !tc.Accepted && (pe == nil || pe.Code != "invalid_field" || pe.Field != "message_id"):
			t.Errorf("%s: got %v, want invalid_field on message_id", tc.Name, err)
		}
	}
}
