package payer_test

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sandboxd/x402/channel/payer"
)

// mustWrite replaces the state file's channels.
func (f *payerFixture) mustWrite(chs []*payer.Channel) {
	f.tb.Helper()
	st, err := payer.OpenStore(context.Background(), f.state)
	if err != nil {
		f.tb.Fatal(err)
	}
	defer st.Close()
	st.Channels = chs
	if err := st.Save(); err != nil {
		f.tb.Fatal(err)
	}
}

// TestChannelStoreSurvivesCrashMidWrite: a writer that died while writing
// its copy leaves the state file whole (the copy is renamed over it only
// once written and synced); the next opener reads the old state and
// removes the copy.
func TestChannelStoreSurvivesCrashMidWrite(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	before, err := os.ReadFile(f.state)
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(filepath.Dir(f.state), filepath.Base(f.state)+".tmp-123456")
	if err := os.WriteFile(half, before[:len(before)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" {
		t.Fatalf("state %+v", ch)
	}
	st, err := payer.OpenStore(context.Background(), f.state)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("the dead writer's copy is still there (%v)", err)
	}
	if rec := f.mustPay(); rec.Total.String() != "10000" {
		t.Fatalf("after the crash: %+v", rec)
	}
}

// TestChannelStoreReplacesWhole: readers running beside a writer saving
// many times always read a whole file, never a partial one.
func TestChannelStoreReplacesWhole(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	chs := f.mustChannels()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				raw, err := os.ReadFile(f.state)
				if err != nil || !json.Valid(raw) {
					t.Errorf("a reader saw %d bytes that are not the whole file (%v)", len(raw), err)
					return
				}
			}
		}()
	}
	for i := range 20 {
		chs[0].Charged = big.NewInt(int64(i))
		f.mustWrite(chs)
	}
	close(done)
	wg.Wait()
}

// TestChannelStoreLockWaitsForContext: a second opener waits for the
// first's lock, and gives up when its context ends.
func TestChannelStoreLockWaitsForContext(t *testing.T) {
	f := newPayer(t)
	st, err := payer.OpenStore(context.Background(), f.state)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := payer.OpenStore(ctx, f.state); err == nil {
		t.Fatal("a second opener got the lock the first holds")
	}
	if err := st.Save(); err != nil { // the lock moves to the new file
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := payer.OpenStore(ctx2, f.state); err == nil {
		t.Fatal("a second opener got the lock after the first saved")
	}
	st.Close()
	st2, err := payer.OpenStore(context.Background(), f.state)
	if err != nil {
		t.Fatal(err)
	}
	st2.Close()
}
