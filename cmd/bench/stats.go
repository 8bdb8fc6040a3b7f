package main

import (
	"slices"
	"time"
)

// sample is a set of measured durations.
type sample []time.Duration

// pct returns the p-th percentile (nearest rank).
func (s sample) pct(p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	i := (p*len(sorted) + 99) / 100
	return sorted[max(i-1, 0)]
}

// measure calls f n times and collects the durations it reports.
func measure(n int, f func() (time.Duration, error)) (sample, error) {
	var s sample
	for range n {
		d, err := f()
		if err != nil {
			return s, err
		}
		s = append(s, d)
	}
	return s, nil
}
