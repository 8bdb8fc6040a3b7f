package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// bench wraps the API client with what the measurements need.
type bench struct {
	c   *client.Client
	url string // the API's base URL
	key string // its API key
}

// run submits a request (in the API's JSON shape), waits for it to end and returns
// the client's wall time.
func (b bench) run(req map[string]any) (*client.Execution, time.Duration, error) {
	r := client.RunRequest{Code: req["code"].(string)}
	if th, ok := req["thread_id"].(string); ok {
		r.ThreadID = th
	}
	if files, ok := req["files"].([]map[string]string); ok {
		for _, f := range files {
			data, _ := base64.StdEncoding.DecodeString(f["content_base64"])
			r.Files = append(r.Files, client.InputFile{Name: f["name"], Content: data})
		}
	}
	ctx := context.Background()
	start := time.Now()
	ex, err := b.c.Run(ctx, r)
	took := time.Since(start)
	if err != nil {
		return nil, took, err
	}
	if ex.Status != "succeeded" {
		return ex, took, fmt.Errorf("execution %s %s: %+v", ex.ID, ex.Status, ex.Error)
	}
	return ex, took, nil
}

func (b bench) threadSandbox(id string) (string, error) {
	th, err := b.c.Thread(context.Background(), id)
	if err != nil {
		return "", err
	}
	return th.Sandbox, nil
}
