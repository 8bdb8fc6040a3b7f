// Command demo runs a real example against a running codeinterp (`make demo`): it
// uploads a CSV, has pandas summarise it and matplotlib chart it, and prints the
// presigned URLs of the PNG and CSV the code produced.
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/codeinterp/codeinterp/client"
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
	c := client.New(cmp.Or(os.Getenv("CODEINTERP_URL"), "http://localhost:8080"), cmp.Or(os.Getenv("CODEINTERP_API_KEY"), "demo-key"))
	ctx := context.Background()
	start := time.Now()
	ex, err := c.Submit(ctx, client.RunRequest{Code: code, Files: []client.InputFile{{Name: "data/sales.csv", Content: []byte(csv)}}})
	if err != nil {
		return err
	}
	fmt.Printf("queued %s\n", ex.ID)
	if ex, err = c.Wait(ctx, ex.ID); err != nil {
		return err
	}
	fmt.Printf("%s in %s (code ran %d ms)\n\n%s\n", ex.Status, time.Since(start).Round(time.Millisecond), *ex.DurationMS, ex.Stdout)
	if ex.Status != "succeeded" {
		if ex.Error != nil {
			return fmt.Errorf("%s: %s\n%s", ex.Error.Name, ex.Error.Value, ex.Error.Traceback)
		}
		return fmt.Errorf("execution %s", ex.Status)
	}
	for _, f := range ex.Files {
		var n countingWriter
		if err := c.Download(ctx, f.URL, &n); err != nil {
			return fmt.Errorf("download %s: %w", f.Name, err)
		}
		if int64(n) != f.Size {
			return fmt.Errorf("download %s: %d bytes, want %d", f.Name, n, f.Size)
		}
		fmt.Printf("%s (%d bytes, link valid until %s):\n  %s\n", f.Name, f.Size, f.ExpiresAt.Format(time.RFC3339), f.URL)
	}
	return nil
}

type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}
