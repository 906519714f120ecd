package ledger

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
)

// mustSecondHandle opens the ledger at path past its lock, as a reader
// would: a second handle on the file for tests of SQLite's own guarantees.
func mustSecondHandle(tb testing.TB, path string) *SQL {
	tb.Helper()
	l, err := openLocked(context.Background(), "test", path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// mustLedger opens the SQLite ledger at path, closed at cleanup.
func mustLedger(tb testing.TB, path string) *SQL {
	tb.Helper()
	l, err := OpenFile(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func TestLedgerConcurrentReserveTwoHandles(t *testing.T) {
	// Two handles on one file stand for two processes (the second one
	// past the lock, which refuses it otherwise): SQLite itself keeps one
	// reservation.
	path := filepath.Join(t.TempDir(), "ledger.db")
	ls := []*SQL{mustLedger(t, path), mustSecondHandle(t, path)}
	e := Entry{Payer: "0xa", Nonce: "0x8", Amount: "5000", Network: "n", Asset: "a"}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			err := ls[i%2].Reserve(context.Background(), e)
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrAlreadyUsed) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d reserved, want 1", wins.Load())
	}
}

// wantHeld checks that opening path fails because another holder has it.
func wantHeld(t *testing.T, path string) {
	t.Helper()
	l, err := OpenFile(context.Background(), path)
	if err == nil {
		l.Close()
		t.Fatal("a second open of a held ledger succeeded")
	}
	msg := sandboxd.ErrorMessage(err)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(msg, path) ||
		!strings.Contains(msg, "another sandboxd") {
		t.Fatalf("error %v; want one naming %s and saying another sandboxd holds it", err, path)
	}
}

// TestLedgerRefusesASecondOpen: while one Ledger holds the file, another
// open in the same process is refused; after Close it succeeds.
func TestLedgerRefusesASecondOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := OpenFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	wantHeld(t, path)
	l.Close()
	mustLedger(t, path)
}

// ledgerHolderEnv makes the test binary a child that holds a ledger.
const ledgerHolderEnv = "SANDBOXD_TEST_HOLD_LEDGER"

// TestLedgerRefusesALedgerAnotherProcessHolds: a child process (this test
// binary re-executed) holds the ledger; this process's open is refused, and
// succeeds once the child is gone.
func TestLedgerRefusesALedgerAnotherProcessHolds(t *testing.T) {
	if path := os.Getenv(ledgerHolderEnv); path != "" {
		holdLedger(path)
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerRefusesALedgerAnotherProcessHolds$")
	cmd.Env = append(os.Environ(), ledgerHolderEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "held") {
				line <- sc.Text()
			}
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("the child exited without holding the ledger")
		}
		t.Log(l)
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not hold the ledger within 60 s")
	}
	wantHeld(t, path)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	mustLedger(t, path)
}

// holdLedger is the child's side: open the ledger, say so, hold it until
// stdin closes.
func holdLedger(path string) {
	l, err := OpenFile(context.Background(), path)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(3)
	}
	os.Stdout.WriteString("held " + path + "\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Close()
}
