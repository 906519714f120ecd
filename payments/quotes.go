package payments

import (
	"fmt"
	"sync"

	"sandboxd"
	"sandboxd/x402"
)

// quotes are the parts of the prices that requests name themselves
// (sandboxd.PaymentRequest.Price, such as sessions.open_price), made on
// first use: the configuration names a handful, each validated at start,
// so the map stays that small.
type quotes struct {
	cfg     Config
	mu      sync.Mutex
	byPrice map[string]*parts
}

// partsOf returns the parts of r: those of its own price when it names
// one, else its environment's. A price that does not parse is the
// service's own bug (the configuration validates every price it sets).
func (g *Gate) partsOf(r sandboxd.PaymentRequest) (*parts, error) {
	if r.Price == "" {
		return g.partsFor(r.Environment), nil
	}
	q := &g.quotes
	q.mu.Lock()
	defer q.mu.Unlock()
	if pt, ok := q.byPrice[r.Price]; ok {
		return pt, nil
	}
	req, err := q.cfg.requirements(r.Price)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeInternal, "payments.check", err, fmt.Sprintf("price %q", r.Price))
	}
	pt := g.priceParts(req)
	q.byPrice[r.Price] = pt
	return pt, nil
}

// priceParts are the gate's parts quoting req (and its batch entry when
// channels are offered).
func (g *Gate) priceParts(req x402.Requirements) *parts {
	pt := g.parts
	pt.req, pt.batch = req, nil
	if g.seller != nil {
		b := g.seller.Entry(req)
		pt.batch = &b
	}
	return &pt
}

// RequirementsOf returns the terms entry the gate quotes for r: its own
// price when it names one, else its environment's (the metrics add its
// amount to the settled sum).
func (g *Gate) RequirementsOf(r sandboxd.PaymentRequest) x402.Requirements {
	if pt, err := g.partsOf(r); err == nil {
		return pt.req
	}
	return g.partsFor(r.Environment).req
}
