// Command demo runs a real example against a running codeinterp (`make demo`): it
// uploads a CSV, has pandas summarise it and matplotlib chart it, and prints the
// presigned URLs of the PNG and CSV the code produced.
package main

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

const code = `import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
monthly = df.groupby([df.date.dt.to_period("M"), "region"])["amount"].sum().unstack()
monthly.to_csv("outputs/monthly.csv")

ax = monthly.plot(kind="bar", figsize=(7, 4), title="Sales by month and region")
ax.set_ylabel("amount")
plt.tight_layout()
plt.savefig("outputs/chart.png", dpi=120)
plt.close()  # saved: no need to also return it as a rich result
print(monthly)`

const csv = `date,region,amount
2026-01-05,north,120
2026-01-17,south,80
2026-02-03,north,95
2026-02-20,south,130
2026-03-11,north,160
2026-03-28,south,70
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	base := cmp.Or(os.Getenv("CODEINTERP_URL"), "http://localhost:8080")
	key := cmp.Or(os.Getenv("CODEINTERP_API_KEY"), "demo-key")
	body, _ := json.Marshal(map[string]any{
		"code":  code,
		"files": []map[string]string{{"name": "data/sales.csv", "content_base64": base64.StdEncoding.EncodeToString([]byte(csv))}},
	})
	var ex struct {
		ID, Status, Stdout, Stderr string
		Error                      *struct{ Name, Value, Traceback string }
		DurationMS                 int64 `json:"duration_ms"`
		Files                      []struct {
			Name, URL string
			Size      int64
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	start := time.Now()
	if err := call("POST", base+"/v1/executions", key, body, &ex); err != nil {
		return err
	}
	fmt.Printf("queued %s\n", ex.ID)
	for ex.Status == "queued" || ex.Status == "running" {
		if err := call("GET", base+"/v1/executions/"+ex.ID+"?wait=30s", key, nil, &ex); err != nil {
			return err
		}
	}
	fmt.Printf("%s in %s (code ran %d ms)\n\n%s\n", ex.Status, time.Since(start).Round(time.Millisecond), ex.DurationMS, ex.Stdout)
	if ex.Status != "succeeded" {
		if ex.Error != nil {
			return fmt.Errorf("%s: %s\n%s", ex.Error.Name, ex.Error.Value, ex.Error.Traceback)
		}
		return fmt.Errorf("execution %s", ex.Status)
	}
	for _, f := range ex.Files {
		resp, err := http.Get(f.URL)
		if err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n != f.Size {
			return fmt.Errorf("download %s: HTTP %d, %d bytes", f.Name, resp.StatusCode, n)
		}
		fmt.Printf("%s (%d bytes, link valid until %s):\n  %s\n", f.Name, f.Size, f.ExpiresAt.Format(time.RFC3339), f.URL)
	}
	return nil
}

func call(method, url, key string, body []byte, out any) error {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
