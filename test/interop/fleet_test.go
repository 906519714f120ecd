package interop

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/pgtest"
	payledger "sandboxd/payments/ledger"
)

// fleetLease is the replicas' lease in these tests: short, so that a killed
// replica's rows are taken over within seconds.
const fleetLease = 3 * time.Second

// fleetRelayers pay the gas of each replica's on-chain settlements: one
// account per replica, as deploy/ recommends (a shared key would race for
// transaction nonces).
var fleetRelayers = []account{
	relayer,
	{"0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6", "0x90F79bf6EB2c4f870365E785982E1f101E93b906"},
	{"0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e", "0x976EA74026E726554dB657fA54763abd0C3a0aa9"},
}

// fleet is three sandboxd replicas sharing one PostgreSQL ledger and the
// Docker daemon, each with its own runtime.instance and replica id.
type fleet struct {
	// t is the test that started the fleet: a replica restarted in a
	// subtest lives on for the next one.
	t     *testing.T
	mode  string
	db    string
	env   [][]string
	nodes []*service
}

// startFleet starts the three replicas of mode with modeEnv(i), the settlement
// configuration of replica i.
func startFleet(t *testing.T, mode string, modeEnv func(i int) []string) *fleet {
	t.Helper()
	return startFleetOf(t, 3, mode, modeEnv)
}

// startFleetOf is startFleet of n replicas.
func startFleetOf(t *testing.T, n int, mode string, modeEnv func(i int) []string) *fleet {
	t.Helper()
	f := &fleet{t: t, mode: mode, db: pgtest.NewDatabase(t)}
	secret := writeKey(t, "fleet.secret", strings.Repeat("5f", 32))
	for i := range n {
		// Each replica listens where it advertises, the same across its
		// restarts: the others forward its sessions' calls there.
		addr := freeAddr(t)
		env := append(paymentEnv(modeEnv(i)),
			"SANDBOX_PAYMENTS_LEDGER="+f.db,
			fmt.Sprintf("SANDBOX_PAYMENTS_REPLICA_ID=%s-%d", mode, i),
			"SANDBOX_PAYMENTS_LEASE="+fleetLease.String(),
			"SANDBOX_RUNTIME_POOL_SIZE=1",
			"SANDBOX_SERVER_ADDR="+addr,
			"SANDBOX_SERVER_ADVERTISE_URL=http://"+addr,
			// The replicas' addresses: the only ones a replica forwards to.
			"SANDBOX_SERVER_TRUSTED_PROXIES=127.0.0.1",
			"SANDBOX_SERVER_FLEET_SECRET_FILE="+secret)
		f.env = append(f.env, env)
		f.nodes = append(f.nodes, f.start(t, i))
	}
	return f
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start starts (or restarts) replica i, stopped when the fleet's test ends.
func (f *fleet) start(_ *testing.T, i int) *service {
	return startService(f.t, instance(fmt.Sprintf("%s-fleet%d", f.mode, i)), true, f.env[i]...)
}

// url is replica i's /v1/code.
func (f *fleet) url(i int) string { return f.nodes[i].URL + "/v1/code" }

// rows returns the ledger's rows in state (all when empty).
func (f *fleet) rows(t *testing.T, state string) []payledger.Entry {
	t.Helper()
	ctx := context.Background()
	l, err := payledger.OpenAt(ctx, f.db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(ctx, payledger.Filter{State: state})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestFleetOnchain and TestFleetFacilitator run the fleet scenarios in both
// settlement modes.
func TestFleetOnchain(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	f := startFleet(t, "onchain", func(i int) []string {
		return []string{
			"SANDBOX_PAYMENTS_SETTLEMENT=onchain",
			"SANDBOX_PAYMENTS_RPC_URL=" + c.rpc,
			"SANDBOX_PAYMENTS_RELAYER_KEY_FILE=" + writeKey(t, fmt.Sprintf("relayer%d.key", i), fleetRelayers[i].key),
		}
	})
	runFleetScenarios(t, c, f)
}

// TestFleetFacilitator: see TestFleetOnchain.
func TestFleetFacilitator(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	url := startFacilitator(t, c, writeKey(t, "facilitator.key", facilitator.key))
	f := startFleet(t, "facilitator", func(int) []string {
		return []string{"SANDBOX_PAYMENTS_SETTLEMENT=facilitator", "SANDBOX_PAYMENTS_FACILITATOR_URL=" + url}
	})
	runFleetScenarios(t, c, f)
}

func runFleetScenarios(t *testing.T, c *chain, f *fleet) {
	payerKey := writeKey(t, "payer.key", payer.key)
	t.Run("same-payment-everywhere", func(t *testing.T) { testFleetSamePayment(t, c, f, payerKey) })
	t.Run("replica-killed", func(t *testing.T) { testFleetKill(t, c, f, payerKey) })
	if f.mode == "onchain" {
		t.Run("sessions", func(t *testing.T) { testFleetSessions(t, c, f, payerKey) })
		t.Run("sessions-payer-cap", func(t *testing.T) { testFleetPayerCap(t, c, f, payerKey) })
		t.Run("sessions-replica-killed", func(t *testing.T) { testFleetSessionKill(t, c, f, payerKey) })
	}
}

// testFleetSamePayment: one payment sent to the three replicas at once (four
// copies each) gets one run and one transfer; every other copy its answer.
func testFleetSamePayment(t *testing.T, c *chain, f *fleet, keyFile string) {
	before := snapshot(t, c)
	var r concurrentResult
	runClient(t, &r, "concurrent", f.url(0), keyFile, "--n", "12", "--also", f.url(1), "--also", f.url(2))
	checkOneRun(t, r, 12, "42\n")
	waitFor(10*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	time.Sleep(500 * time.Millisecond) // room for a second transfer, were there one
	expectMoved(t, c, before, payer.address)
	if rows := f.rows(t, payledger.StatusSettled); len(rows) != 1 {
		t.Errorf("%d settled rows, want 1", len(rows))
	}
}

// testFleetKill: replica 0 is SIGKILLed while it runs a paid program. The
// others keep serving paid calls; after the lease a live replica releases
// the killed one's reservation (its settlement was never sent), so nothing
// is charged for it, and the restarted replica finds nothing of its own
// left to resolve and serves again. Every paid answer is one transfer.
func testFleetKill(t *testing.T, c *chain, f *fleet, keyFile string) {
	before := snapshot(t, c)
	settledBefore := len(f.rows(t, payledger.StatusSettled))
	victim := exec.Command("node", filepath.Join(interopDir, "client.mjs"), "pay", "--url", f.url(0),
		"--key-file", keyFile, "--code", "import time; time.sleep(4); print(6*7)")
	victim.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	var held []payledger.Entry
	waitFor(30*time.Second, func() bool { held = f.rows(t, payledger.StatusReserved); return len(held) == 1 })
	if len(held) != 1 || held[0].Replica != f.mode+"-0" {
		t.Fatalf("reserved rows while replica 0 runs: %+v, want one of %s-0", held, f.mode)
	}
	if err := f.nodes[0].Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-f.nodes[0].Exited()
	_ = victim.Wait() // its connection was cut: no answer, so it must not pay

	// The others keep serving paid calls meanwhile.
	for i := 1; i < 3; i++ {
		var r payResult
		runClient(t, &r, "pay", f.url(i), keyFile)
		if r.Status != http.StatusOK || r.Settlement == nil || !r.Settlement.Success {
			t.Fatalf("replica %d after the kill: status %d %+v", i, r.Status, r.Body)
		}
	}
	// After the lease a live replica takes the row over and releases it.
	var got payledger.Entry
	waitFor(6*fleetLease, func() bool {
		for _, e := range f.rows(t, "") {
			if e.Nonce == held[0].Nonce {
				got = e
			}
		}
		return got.Status == payledger.StatusReleased
	})
	if got.Status != payledger.StatusReleased || got.Replica == f.mode+"-0" {
		t.Fatalf("the killed replica's row after the lease: %+v; want released by a live replica", got)
	}
	f.nodes[0] = f.start(t, 0)
	if !strings.Contains(f.nodes[0].Log(), "recovered_released=0") {
		t.Errorf("the restarted replica resolved rows again:\n%s", f.nodes[0].Log())
	}
	var r payResult
	runClient(t, &r, "pay", f.url(0), keyFile)
	if r.Status != http.StatusOK || r.Settlement == nil || !r.Settlement.Success {
		t.Fatalf("restarted replica: status %d %+v", r.Status, r.Body)
	}
	// Three answers, three transfers, nothing for the killed run.
	waitFor(10*time.Second, func() bool { return c.balance(t, payee.address)-before.payee >= 3*price })
	time.Sleep(500 * time.Millisecond)
	if d := c.balance(t, payee.address) - before.payee; d != 3*price {
		t.Errorf("payee got %d for three answers, want %d", d, 3*price)
	}
	if n := len(f.rows(t, payledger.StatusSettled)) - settledBefore; n != 3 {
		t.Errorf("%d new settled rows, want 3", n)
	}
	if open := append(f.rows(t, payledger.StatusReserved), f.rows(t, payledger.StatusSettling)...); len(open) != 0 {
		t.Errorf("open rows left: %+v", open)
	}
}
