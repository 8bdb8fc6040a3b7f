package main

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

const chart = `import pandas as pd, numpy as np, matplotlib.pyplot as plt
df = pd.read_csv("data.csv")
df.groupby("k")["v"].mean().plot.bar()
plt.savefig("outputs/chart.png")
print(len(df))`

func oneOff(c bench, t *table, n int) error {
	var pickup sample
	s, err := measure(n, func() (time.Duration, error) {
		ex, d, err := c.run(map[string]any{"code": "print(1)"})
		if err == nil && ex.StartedAt != nil {
			pickup = append(pickup, ex.StartedAt.Sub(ex.CreatedAt))
		}
		return d, err
	})
	if err != nil {
		return fmt.Errorf("one-off print(1): %w", err)
	}
	t.add("one-off print(1), POST + GET ?wait", s, "")
	t.add("  of which accepted → code started", pickup, "asynq pickup + sandbox create")

	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "%d,%d\n", i%10, i)
	}
	data := base64.StdEncoding.EncodeToString([]byte(b.String()))
	var chartPickup, chartRun sample
	s, err = measure(n, func() (time.Duration, error) {
		ex, d, err := c.run(map[string]any{"code": chart, "files": []map[string]string{{"name": "data.csv", "content_base64": data}}})
		if err == nil && ex.StartedAt != nil && ex.FinishedAt != nil {
			chartPickup = append(chartPickup, ex.StartedAt.Sub(ex.CreatedAt))
			chartRun = append(chartRun, ex.FinishedAt.Sub(*ex.StartedAt))
		}
		return d, err
	})
	if err != nil {
		return fmt.Errorf("one-off chart: %w", err)
	}
	t.add("one-off pandas+matplotlib chart (10k-row CSV in, PNG out)", s, "")
	t.add("  of which accepted → code started", chartPickup, "")
	t.add("  of which started → finished", chartRun, "inputs, code, rich result, outputs stored")
	return nil
}
