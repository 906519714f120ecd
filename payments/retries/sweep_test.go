package retries

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestSweeperEvery: the sweeper sweeps at once, then every SweepEvery,
// tells the Observer, and stops on Close (twice is fine).
func TestSweeperEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.sweep = SweepReport{Expired: 3, Bytes: 100}
		k, rec := mustKeeper(t, f, DefaultWait, Options{})
		c := k.Start()
		time.Sleep(3*DefaultSweepEvery + time.Second)
		if n := f.count("sweep"); n != 4 {
			t.Errorf("%d sweeps in 3 periods, want 4", n)
		}
		if seen, _ := rec.sweepsSeen(); seen != 4 {
			t.Errorf("observed %d sweeps", seen)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		time.Sleep(2 * DefaultSweepEvery)
		if n := f.count("sweep"); n != 4 {
			t.Errorf("%d sweeps after Close", n)
		}
	})
}

// TestSweeperBudget: answers stored past MaxBytes (from the last pass's
// sum) start a pass at once, coalesced; answers not kept count nothing.
func TestSweeperBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		k, rec := mustKeeper(t, f, DefaultWait, Options{SweepEvery: time.Hour})
		defer k.Start().Close()
		max := int64(k.Config().MaxBytes)
		k.Stored(max, false)
		k.Stored(max/2, true)
		synctest.Wait()
		if n := f.count("sweep"); n != 1 {
			t.Fatalf("%d sweeps under the budget, want the first only", n)
		}
		k.Stored(max/2+1, true)
		k.Stored(max, true)
		synctest.Wait()
		if n := f.count("sweep") - 1; n < 1 || n > 2 {
			t.Errorf("%d sweeps past the budget, want one (two if the second came during the first)", n)
		}
		if kept := rec.keptSeen(); len(kept) != 4 || kept[0] {
			t.Errorf("kept observed %v", kept)
		}
	})
}

// TestSweeperFails: a pass that fails is observed and retried next period.
func TestSweeperFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.err = errors.New("database is locked")
		k, rec := mustKeeper(t, f, DefaultWait, Options{})
		defer k.Start().Close()
		time.Sleep(2*DefaultSweepEvery + time.Second)
		if _, err := rec.sweepsSeen(); f.count("sweep") != 3 || err == nil {
			t.Errorf("%d sweeps, observed err %v", f.count("sweep"), err)
		}
	})
}
