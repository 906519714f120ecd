package main

import (
	"testing"
	"time"
)

// TestInterleavedRatioPoolsTheSlices: 30 answers over 4 s of the
// service's slices against 40 cycles over 4 s of the engine's is 0.75×,
// whatever each round's own rates were, and 0.5× when 10 of the answers
// took containers the pool had started before the slices.
func TestInterleavedRatioPoolsTheSlices(t *testing.T) {
	iv := interleaved{
		service: []phase{{ok: 20, elapsed: 2 * time.Second, perSec: 10}, {ok: 10, elapsed: 2 * time.Second, perSec: 5}},
		engine:  []ceilingRun{{cycles: 10, elapsed: time.Second, perSec: 10}, {cycles: 30, elapsed: 3 * time.Second, perSec: 10}},
	}
	if got := iv.ratio(); got < 0.7499 || got > 0.7501 {
		t.Errorf("ratio %.4f, want 0.75", got)
	}
	if got := iv.rounds(); got != "10.0:10.0, 5.0:10.0" {
		t.Errorf("rounds %q", got)
	}
	iv.drawn = []int64{4, 6}
	if got := iv.ratio(); got < 0.4999 || got > 0.5001 {
		t.Errorf("with 10 answers drawn from the pools' start, ratio %.4f, want 0.5", got)
	}
	if got := (interleaved{service: iv.service}).ratio(); got != 0 {
		t.Errorf("with no engine slice the ratio is %v, want 0 (not measured)", got)
	}
}

// TestShareOfTheCores: on 2 cores a 250 ms step holds 50 ticks.
func TestShareOfTheCores(t *testing.T) {
	for busy, want := range map[int64]float64{0: 0, 12: 0.24, 25: 0.5, 50: 1} {
		if got := shareOf(busy, 250*time.Millisecond, 2); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("shareOf(%d ticks) = %v, want %v", busy, got, want)
		}
	}
}
