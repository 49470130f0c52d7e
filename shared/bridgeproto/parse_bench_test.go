package bridgeproto

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkParseAPIResponse: Parse of a 64 KiB api_response against one
// plain json.Unmarshal into the typed message (the floor: one decode).
func BenchmarkParseAPIResponse(b *testing.B) {
	msg, _ := json.Marshal(APIResponse{Type: TypeAPIResponse, RequestID: "req_1", Status: 200,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: strings.Repeat("0123456789abcdef", 4096)})
	b.Run("baseline_unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			var m APIResponse
			if err := json.Unmarshal(msg, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			if _, err := Parse(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseSmallFrames: Parse of the small frames a relay is made of
// (an api_response of a short JSON answer, a stream_event) against one plain
// json.Unmarshal of each: the fixed cost per frame, which dominates P1/P2.
func BenchmarkParseSmallFrames(b *testing.B) {
	resp, _ := json.Marshal(APIResponse{Type: TypeAPIResponse, RequestID: "req_0123456789abcdef", Status: 200,
		Headers: map[string]string{"Content-Type": "application/json", "Date": "Mon, 23 Nov 2026 12:00:00 GMT", "Content-Length": "97"},
		Body:    `{"body":"","header_names":["Accept-Encoding","User-Agent"],"method":"GET","path":"/api/echo"}` + "\n"})
	ev, _ := json.Marshal(StreamEvent{Type: TypeStreamEvent, RequestID: "req_0123456789abcdef", Seq: 42, Data: "chunk 42"})
	frames := [][]byte{resp, ev}
	b.Run("baseline_unmarshal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var r APIResponse
			var e StreamEvent
			if json.Unmarshal(frames[0], &r) != nil || json.Unmarshal(frames[1], &e) != nil {
				b.Fatal("decode")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, f := range frames {
				if _, err := Parse(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
