package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// BenchmarkInstructionsTenStatus compares one POST /v1/instructions/run
// holding 10 parallel @svc::status blocks with 10 parallel direct GET
// /v1/status calls, alternated in the same run (scripts/bench-instructions).
func BenchmarkInstructionsTenStatus(b *testing.B) {
	d := harness.Start(b, harness.Options{})
	client := benchHTTPClient()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	text := strings.Repeat("```instr\n@svc::status\n```\n", 10)
	body, _ := json.Marshal(map[string]string{"text": text})
	batch := func() {
		res := benchPost(b, client, d, "/v1/instructions/run", body)
		if bytes.Count(res, []byte(`"http_status":200`)) != 10 {
			b.Fatalf("batch: %.300s", res)
		}
	}
	direct := func() {
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(d.URL + "/v1/status")
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
				}
			}()
		}
		wg.Wait()
	}
	benchPair(b, "instr 10x status", batch, direct)
}
