package payments

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// ledgerBreak makes a ledger's database fail, as it does in production.
type ledgerBreak struct {
	name string
	// open returns the location to open the ledger at, and the function
	// that breaks it.
	open func(t *testing.T, b ledgertest.Backend) (string, func())
}

// ledgerBreaks lists the failures each backend is tested with. SQLite on a
// full disk is TestLedgerDiskFull.
var ledgerBreaks = map[string][]ledgerBreak{
	"sqlite": {{"file removed", func(t *testing.T, b ledgertest.Backend) (string, func()) {
		loc := b.Location(t)
		return loc, func() { os.Remove(loc) }
	}}},
	"postgres": {
		{"disk full", func(t *testing.T, b ledgertest.Backend) (string, func()) {
			loc := b.Location(t)
			return loc, func() { mustDiskFullTrigger(t, loc) }
		}},
		{"unreachable", func(t *testing.T, b ledgertest.Backend) (string, func()) {
			p := mustProxy(t, b.Location(t))
			return p.url, p.Close
		}},
	},
}

// TestLedgerConformanceUnavailable: when the database cannot be written or
// reached, a paid call is refused with CodeUnavailable (503) before it
// runs, and a call admitted before is not settled: nothing is collected
// unrecorded.
func TestLedgerConformanceUnavailable(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		for _, br := range ledgerBreaks[b.Name] {
			t.Run(br.name, func(t *testing.T) {
				ctx := context.Background()
				loc, breakIt := br.open(t, b)
				cfg := testConfig(t)
				cfg.Ledger = loc
				l := ledgertest.Open(t, cfg.ledgerConfig())
				s := &fakeSettler{settleTx: "0x1"}
				g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
				if err != nil {
					t.Fatal(err)
				}
				key := x402test.Key(t)
				admitted, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, key, g.Requirements(), nil))))
				if err != nil {
					t.Fatal(err)
				}
				breakIt()
				_, err = begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, key, g.Requirements(), nil))))
				if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
					t.Fatalf("Begin with the ledger broken = %v, want CodeUnavailable", err)
				}
				if _, err := admitted.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
					t.Fatalf("Settle with the ledger broken = %v, want CodeUnavailable", err)
				}
				if n := s.settles.Load(); n != 0 {
					t.Fatalf("%d settlements sent with the ledger broken, want 0", n)
				}
			})
		}
	})
}

// TestLedgerFileRemoved: SQLite goes on writing to a ledger file removed
// while open, rows nobody would read again; the ledger refuses paid calls
// instead, and does not let a settlement leave unrecorded.
func TestLedgerFileRemoved(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	path := filepath.Join(t.TempDir(), "ledger.db")
	g, l := newTestGateAt(t, s, path)
	pay := func() sandboxd.PaymentRequest {
		return paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)))
	}
	charge, err := begin(g, ctx, pay())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, err = begin(g, ctx, pay())
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), "removed or replaced") ||
		!strings.Contains(sandboxd.ErrorMessage(err), "ledger could not record the payment") {
		t.Fatalf("Begin with the ledger removed = %v, want CodeUnavailable", err)
	}
	if out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); out != nil || sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Settle with the ledger removed = %v, %v; want CodeUnavailable", out, err)
	}
	if n := s.settles.Load(); n != 0 {
		t.Fatalf("the settler was called %d times", n)
	}
	// A new file at the path is not the ledger either.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve(ctx, ledgertest.Entry(1)); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Reserve with the ledger replaced = %v, want CodeUnavailable", err)
	}
}

// mustDiskFullTrigger makes every write to the payments table of the
// database at loc fail as PostgreSQL does when its disk is full (SQLSTATE
// 53100, disk_full).
func mustDiskFullTrigger(t *testing.T, loc string) {
	t.Helper()
	db, err := sql.Open("pgx", loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`,
		`CREATE TRIGGER disk_full BEFORE INSERT OR UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION disk_full()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// proxy forwards TCP connections to a PostgreSQL server until closed, when
// it cuts every connection: the database becomes unreachable.
type proxy struct {
	url   string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// mustProxy starts a proxy to the server of the postgres:// URL loc and
// returns it, its url pointing at the proxy.
func mustProxy(t *testing.T, loc string) *proxy {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	u.Host = ln.Addr().String()
	p := &proxy{url: u.String(), ln: ln}
	t.Cleanup(p.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// Close stops accepting and cuts every connection.
func (p *proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
