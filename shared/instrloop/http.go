package instrloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// HTTPExecutor runs replies through a daemon's POST /v1/instructions/run.
// Token, when set, is sent as the bearer token (host operations need it).
type HTTPExecutor struct {
	BaseURL string
	Token   string
	Client  *http.Client // default http.DefaultClient
}

// Execute implements Executor.
func (h HTTPExecutor) Execute(ctx context.Context, reply string) (string, bool, error) {
	body, _ := json.Marshal(map[string]string{"text": reply})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/v1/instructions/run", bytes.NewReader(body))
	if err != nil {
		return "", true, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", true, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", true, err
	}
	var env struct {
		OK   bool `json:"ok"`
		Data struct {
			Report  string `json:"report"`
			Results []struct {
				OK bool `json:"ok"`
			} `json:"results"`
		} `json:"data"`
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || !env.OK {
		return "", true, fmt.Errorf("instructions run: HTTP %d %s %s", resp.StatusCode, env.Error.Code, env.Error.Message)
	}
	failed := false
	for _, r := range env.Data.Results {
		failed = failed || !r.OK
	}
	return env.Data.Report, failed, nil
}
