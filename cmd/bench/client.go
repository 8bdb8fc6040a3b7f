package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

type client struct{ base, key string }

type execution struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Stdout     string     `json:"stdout"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      *struct{ Name, Value string }
	Sandbox    struct {
		Resumed bool `json:"resumed"`
	} `json:"sandbox"`
}

func (c *client) call(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// run submits code, long-polls it to the end and returns the client's wall time.
func (c *client) run(req map[string]any) (execution, time.Duration, error) {
	start := time.Now()
	var ex execution
	if err := c.call("POST", "/v1/executions", req, &ex); err != nil {
		return ex, 0, err
	}
	for ex.Status == "queued" || ex.Status == "running" {
		if err := c.call("GET", "/v1/executions/"+ex.ID+"?wait=60s", nil, &ex); err != nil {
			return ex, 0, err
		}
	}
	took := time.Since(start)
	if ex.Status != "succeeded" {
		return ex, took, fmt.Errorf("execution %s %s: %+v", ex.ID, ex.Status, ex.Error)
	}
	return ex, took, nil
}
