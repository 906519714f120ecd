package retries

import "time"

// The outcomes of a retry, for Observer.Replay (the metric's outcome label).
const (
	// OutcomeAnswered: the stored answer was answered.
	OutcomeAnswered = "answered"
	// OutcomePending: the first settlement is pending (202).
	OutcomePending = "pending"
	// OutcomeGone: the answer was paid for but its bytes not kept (410).
	OutcomeGone = "gone"
	// OutcomeInProgress: the first request was still running when the
	// wait ran out (409).
	OutcomeInProgress = "in_progress"
	// OutcomeNotDelivered: the first request was not delivered (409).
	OutcomeNotDelivered = "not_delivered"
	// OutcomeConflict: the payment id was used for another request (409).
	OutcomeConflict = "conflict"
	// OutcomeBusy: too many retries were waiting (429).
	OutcomeBusy = "busy"
	// OutcomeFailed: the ledger could not be read, or the retry's caller
	// left.
	OutcomeFailed = "failed"
)

// Observer is told what the keeper did, for the metrics
// (docs/design/retries.md §7.3). Its methods must not block.
type Observer interface {
	// Lookup is one LookupAnswer: whether it found a row, and its time.
	Lookup(found bool, d time.Duration)
	// Replay is one retry answered or refused: how it was recognised
	// (sandboxd.ReplayByPayment, ReplayByID), its outcome (Outcome*), and
	// how long it waited for the first request and read the answer.
	Replay(by, outcome string, d time.Duration)
	// Kept is one answer stored by a settlement: its bytes kept, or not
	// (over MaxAnswerBytes).
	Kept(kept bool)
	// Swept is one sweep pass, its report (zero when err is set) and time.
	Swept(r SweepReport, d time.Duration, err error)
}

// noObserver is the Observer of a keeper given none.
type noObserver struct{}

func (noObserver) Lookup(bool, time.Duration)              {}
func (noObserver) Replay(string, string, time.Duration)    {}
func (noObserver) Kept(bool)                               {}
func (noObserver) Swept(SweepReport, time.Duration, error) {}
