package httpapi

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"sandboxd"
	"sandboxd/internal/slots"
)

// fakeRunner answers every run with result, or err when set.
type fakeRunner struct {
	mu        sync.Mutex
	result    sandboxd.Result
	err       error
	healthErr error
	jobs      []sandboxd.Job
	block     chan struct{} // when non-nil, Run waits for it
}

func (f *fakeRunner) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return sandboxd.Result{}, ctx.Err()
		}
	}
	return f.result, f.err
}

func (f *fakeRunner) Health(context.Context) error { return f.healthErr }

func (f *fakeRunner) Info(context.Context) (sandboxd.RunnerInfo, error) {
	return sandboxd.RunnerInfo{Engine: "docker 20.10.24", EngineAPI: "1.41", Image: "sandbox-python:3.11", OCIRuntime: "runc"}, f.healthErr
}

func (f *fakeRunner) ran() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

// fakeGate records what happened to its authorizations and charges.
type fakeGate struct {
	mu         sync.Mutex
	checkErr   error
	reserveErr error
	settleErr  error
	// checkBlock, when non-nil, makes Check wait for it (or ctx);
	// settleBlock, when non-nil, makes Settle wait for it.
	checkBlock  chan struct{}
	settleBlock chan struct{}
	checked     int
	reserved    int
	settled     int
	released    int
	requests    []sandboxd.PaymentRequest
	// delivered are what Settle was handed, in order.
	delivered []sandboxd.Delivered
	// payer, when set, is the Payer of the authorizations instead of
	// fakePayer.
	payer string
	// settlement, when set, is what Settle answers instead of
	// fakeSettlement.
	settlement *sandboxd.Settlement
}

func (g *fakeGate) Check(ctx context.Context, req sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	g.mu.Lock()
	g.checked++
	g.requests = append(g.requests, req)
	block := g.checkBlock
	g.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if g.checkErr != nil {
		return nil, g.checkErr
	}
	return fakeCharge{g}, nil
}

// count returns one of the gate's counters under its lock.
func (g *fakeGate) count(n *int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return *n
}

// fakeCharge is both the fake authorization and the fake charge.
type fakeCharge struct{ g *fakeGate }

// Payer is fakePayer: every fake payment is the same wallet's, unless
// the gate names another.
func (c fakeCharge) Payer() string {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.payer != "" {
		return c.g.payer
	}
	return fakePayer
}

// fakePayer is the wallet of the fake payments.
const fakePayer = "0xpayer"

func (c fakeCharge) Reserve(context.Context) (sandboxd.Charge, error) {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.reserveErr != nil {
		return nil, c.g.reserveErr
	}
	c.g.reserved++
	return c, nil
}

func (c fakeCharge) Settle(_ context.Context, d sandboxd.Delivered) (*sandboxd.Settlement, error) {
	c.g.mu.Lock()
	block := c.g.settleBlock
	c.g.delivered = append(c.g.delivered, d)
	c.g.mu.Unlock()
	if block != nil {
		<-block
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.settleErr != nil {
		return nil, c.g.settleErr
	}
	c.g.settled++
	if c.g.settlement != nil {
		return c.g.settlement, nil
	}
	return fakeSettlement(), nil
}

func (c fakeCharge) Release(context.Context) {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.released++
}

// fakeSettlement is the settlement fakeCharge reports by default.
func fakeSettlement() *sandboxd.Settlement {
	return &sandboxd.Settlement{Version: 2, Success: true, Transaction: "0xsettled", Network: "eip155:84532", Payer: "0xpayer"}
}

// newTestServer returns a Server over the fakes with small limits.
func newTestServer(r *fakeRunner, g *fakeGate) *Server {
	return &Server{
		Runner:        r,
		Admitter:      slots.New(1, 0),
		Gate:          g,
		Log:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxBodyBytes:  1024,
		MaxCodeBytes:  100,
		MaxStdinBytes: 10,
		Version:       VersionInfo{Version: "test", Commit: "abc", GoVersion: "go"},
	}
}
