package relayhttp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The relay answers are written from structs whose fields are in sorted key
// order (issue 15) instead of generic maps: the bytes a caller receives must
// be exactly what the maps gave.
func TestRelayAnswerStructsKeepTheMapBytes(t *testing.T) {
	headers := map[string]string{"Content-Type": "application/json", "X-B": "<&>"}
	body := `{"a":"<b>"}` + "\n"
	viaStruct, err := json.Marshal(BufferedAnswer{RequestID: "r1", Platform: "platform_b", ClientID: "c1",
		Status: 201, Headers: headers, Body: body, DurationMs: 7})
	if err != nil {
		t.Fatal(err)
	}
	viaMap, _ := json.Marshal(map[string]any{"requestId": "r1", "platform": "platform_b", "clientId": "c1",
		"status": 201, "headers": headers, "body": body, "duration_ms": int64(7)})
	if !bytes.Equal(viaStruct, viaMap) {
		t.Fatalf("buffered answer bytes changed:\nstruct %s\nmap    %s", viaStruct, viaMap)
	}
	viaStruct, _ = json.Marshal(sseStreamEvent{ClientID: "c1", Data: "d<", Event: "e", Platform: "platform_b", RequestID: "r1", Seq: 3})
	viaMap, _ = json.Marshal(map[string]any{"clientId": "c1", "data": "d<", "event": "e", "platform": "platform_b", "requestId": "r1", "seq": int64(3)})
	if !bytes.Equal(viaStruct, viaMap) {
		t.Fatalf("stream event bytes changed:\nstruct %s\nmap    %s", viaStruct, viaMap)
	}
}
