// Package retries answers the retry of a paid request from the answer its
// first attempt bought, so that a payer whose answer was lost on the way
// (a dropped connection, a proxy's timeout, a caller that hung up) gets it
// again without a second run or a second settlement
// (docs/design/retries.md).
//
// The answers themselves are kept by the ledger, shared by a fleet; this
// package decides, from what the ledger holds (Store), whether a verified
// payment is a retry (Keeper.Find, Keeper.Raced), waits for a first
// request still running (woken at once on this replica by Keeper.Signal,
// else by one poller per payment), and sweeps expired answers and keeps
// the ledger under its byte budget (Keeper.Start). It never imports the
// ledger: an adapter bridges the two.
package retries
