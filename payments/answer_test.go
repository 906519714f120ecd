package payments

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/chaintest"
	"sandboxd/x402/x402test"
)

// hostileRemote is one way an RPC node or a facilitator can answer to cost
// the service: ok is a valid answer of that remote, sent where the attack
// is beside the body.
type hostileRemote struct {
	name  string
	serve func(w http.ResponseWriter, r *http.Request, ok string)
	// want is in the error of a bounded read.
	want string
}

// streamZeros writes prefix, n bytes of '0' and suffix.
func streamZeros(w io.Writer, prefix string, n int, suffix string) {
	io.WriteString(w, prefix)
	chunk := []byte(strings.Repeat("0", 64<<10))
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	io.WriteString(w, suffix)
}

// hostileRemotes: the largest body (64 MiB, as a value and as an error
// page), the largest headers (1 MiB), the deepest JSON (100,000 levels),
// and the slowest (a byte every 50 ms).
var hostileRemotes = []hostileRemote{
	{"64 MiB answer", func(w http.ResponseWriter, _ *http.Request, _ string) {
		streamZeros(w, `{"jsonrpc":"2.0","id":1,"result":"0x`, 64<<20, `"}`)
	}, "over the limit"},
	{"64 MiB error page", func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.WriteHeader(http.StatusBadGateway)
		streamZeros(w, "<html>", 64<<20, "</html>")
	}, "over the limit"},
	{"1 MiB of headers", func(w http.ResponseWriter, _ *http.Request, ok string) {
		w.Header().Set("X-Junk", strings.Repeat("j", 1<<20))
		io.WriteString(w, ok)
	}, "headers exceeded"},
	{"100,000 levels deep", func(w http.ResponseWriter, _ *http.Request, ok string) {
		io.WriteString(w, strings.TrimSuffix(ok, "}")+`,"x":`+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+"}")
	}, "nesting is too deep"},
	{"a byte every 50 ms", func(w http.ResponseWriter, r *http.Request, ok string) {
		for i := 0; i < len(ok); i++ {
			io.WriteString(w, ok[i:i+1])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}, ""},
}

// allocated runs f and returns the bytes it allocated (the whole
// process's, so tests running beside it count too: the bound is loose).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRPCAnswersAreBounded: a hostile RPC node answering the service's
// first call with each hostile answer stops the start as unavailable
// within the RPC timeout, the service having read at most 4 MiB of it
// (maxRPCAnswer) and 64 KiB of headers. go-ethereum's client alone reads a
// node's answer, or its error page, whole.
func TestRPCAnswersAreBounded(t *testing.T) {
	c := &chaintest.Chain{Relayer: x402test.Key(t)} // only the key and the config are used
	for _, h := range hostileRemotes {
		t.Run(h.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.serve(w, r, `{"jsonrpc":"2.0","id":1,"result":"0x14a34"}`)
			}))
			defer srv.Close()
			cfg := faultConfig(t, c, srv.URL)
			var err error
			start := time.Now()
			bytes := allocated(func() { _, err = dialChain(context.Background(), cfg, mustRequirements(t, cfg), nil) })
			took := time.Since(start)
			t.Logf("%s: %v, %d bytes allocated: %v", h.name, took, bytes, err)
			if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), h.want) {
				t.Errorf("dialChain = %v, want CodeUnavailable with %q", err, h.want)
			}
			if took > 3*faultRPCTimeout {
				t.Errorf("took %v; the RPC timeout is %v", took, faultRPCTimeout)
			}
			if bytes > 32<<20 {
				t.Errorf("allocated %d bytes reading the answer, want under 32 MiB", bytes)
			}
		})
	}
}

// TestFacilitatorAnswersAreBounded: a facilitator answering /verify with
// each hostile answer (a valid one beside headers or nesting) makes the
// check unavailable within the verify timeout, the service having read at
// most 1 MiB of it (maxFacilitatorBody) and 64 KiB of headers.
func TestFacilitatorAnswersAreBounded(t *testing.T) {
	p, _ := verifiedPayment(t, false)
	for _, h := range hostileRemotes {
		t.Run(h.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.serve(w, r, `{"isValid":true,"payer":"0x1"}`)
			}))
			defer srv.Close()
			f := newFacilitatorSettler(facilitatorConfig{URL: srv.URL, VerifyTimeout: time.Second, SettleTimeout: time.Second})
			var err error
			start := time.Now()
			bytes := allocated(func() { err = f.Check(context.Background(), p) })
			took := time.Since(start)
			t.Logf("%s: %v, %d bytes allocated: %v", h.name, took, bytes, err)
			if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), h.want) {
				t.Errorf("Check = %v, want CodeUnavailable with %q", err, h.want)
			}
			if took > 3*time.Second {
				t.Errorf("took %v; the verify timeout is 1s", took)
			}
			if bytes > 8<<20 {
				t.Errorf("allocated %d bytes reading the answer, want under 8 MiB", bytes)
			}
		})
	}
}
