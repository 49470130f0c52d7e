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
