package e2e

import (
	"encoding/json"
	"io"
	"net/http"
)

func decodeBody(resp *http.Response, v any) error {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
