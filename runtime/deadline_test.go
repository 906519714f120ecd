package runtime

import (
	"testing"
	"time"
)

// TestDeadlineWithoutAck: a runner that never acks is killed at the limit
// wait after the hand-over, whatever the program's limit.
func TestDeadlineWithoutAck(t *testing.T) {
	// began is taken first: the deadline's clock starts after it, so a
	// pause between the two (a loaded host) cannot make it look early.
	began := time.Now()
	d := newDeadline(time.Hour, 50*time.Millisecond, make(chan bool))
	defer d.Stop()
	select {
	case <-d.C:
		if el := time.Since(began); el < 50*time.Millisecond {
			t.Fatalf("fired after %v, before the limit", el)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never fired")
	}
}

// TestDeadlineCountsFromTheAck: a runner that acks late (it imported its
// modules first), after the program's limit but within the ack wait, gets
// the whole limit from its ack, and the run's start is the ack.
func TestDeadlineCountsFromTheAck(t *testing.T) {
	const limit = 100 * time.Millisecond
	ack := make(chan bool)
	d := newDeadline(limit, time.Second, ack)
	defer d.Stop()
	time.Sleep(200 * time.Millisecond)
	acked := time.Now()
	ack <- true
	select {
	case now := <-d.C:
		if got := now.Sub(acked); got < limit-10*time.Millisecond {
			t.Fatalf("fired %v after the ack, want the whole %v", got, limit)
		}
		if s := d.started(); s.Before(acked.Add(-10 * time.Millisecond)) {
			t.Fatalf("started %v before the ack", acked.Sub(s))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never fired")
	}
}

// TestDeadlineOnTimeAckKeepsTheHandOver: an ack that is not late leaves the
// limit counting from the hand-over, however late the ack was seen (the
// attach stream lags on a busy host).
func TestDeadlineOnTimeAckKeepsTheHandOver(t *testing.T) {
	const limit = 200 * time.Millisecond
	ack := make(chan bool, 1)
	began := time.Now()
	d := newDeadline(limit, time.Second, ack)
	defer d.Stop()
	time.Sleep(100 * time.Millisecond)
	ack <- false
	select {
	case now := <-d.C:
		if got := now.Sub(began); got < limit {
			t.Fatalf("fired %v after the hand-over, before the limit %v", got, limit)
		}
		if s := d.started(); s.After(began.Add(50 * time.Millisecond)) {
			t.Fatalf("the limit counts from %v after the hand-over, want the hand-over", s.Sub(began))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never fired")
	}
}

// TestAckForms: both forms of the ack are taken off stdout and told on
// ackC, split anywhere across writes; anything else is output.
func TestAckForms(t *testing.T) {
	proto := newProtocol(16, 1<<20)
	for _, tc := range []struct {
		in   string
		late bool
		out  string
	}{
		{string(proto.ack) + "hi", false, "hi"},
		{string(proto.lateAck) + "hi", true, "hi"},
		{string(proto.prefix) + "gx\nhi", false, string(proto.prefix) + "gx\nhi"},
	} {
		for split := 0; split <= len(tc.in); split++ {
			o := newOutput(1<<10, proto)
			o.ackC = make(chan bool, 1)
			o.writeStdout([]byte(tc.in[:split]))
			o.writeStdout([]byte(tc.in[split:]))
			o.finish()
			acked := o.acked()
			if want := tc.out == "hi"; acked != want {
				t.Fatalf("%q split at %d: acked %v, want %v", tc.in, split, acked, want)
			}
			if acked {
				if late := <-o.ackC; late != tc.late {
					t.Fatalf("%q split at %d: late %v, want %v", tc.in, split, late, tc.late)
				}
			}
			if got := string(o.stdout.buf); got != tc.out {
				t.Fatalf("%q split at %d: stdout %q, want %q", tc.in, split, got, tc.out)
			}
		}
	}
}

// TestDrainCountsFromTheDeadline: after a deadline kill, output is read
// until drainGrace after the deadline fired, not after the run saw it (a
// loaded host wakes the service late), and for at least drainFloor more.
func TestDrainCountsFromTheDeadline(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		late, want time.Duration // how late the deadline was seen; the drain's end, from now
	}{
		{0, drainGrace},
		{100 * time.Millisecond, drainGrace - 100*time.Millisecond},
		{drainGrace - drainFloor, drainFloor},
		{200 * time.Millisecond, drainFloor},
		{2 * time.Second, drainFloor},
	} {
		if got := drainEnd(now.Add(-c.late), now).Sub(now); got != c.want {
			t.Errorf("deadline seen %v late: drain for %v more, want %v", c.late, got, c.want)
		}
	}
}
