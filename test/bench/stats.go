package main

import (
	"sort"
	"time"
)

// latencies is a sample of durations.
type latencies []time.Duration

// pct returns the p-th percentile (0..100), nearest rank.
func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s)) + 0.5)
	if i < 1 {
		i = 1
	}
	if i > len(s) {
		i = len(s)
	}
	return s[i-1]
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
