package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/rpc"
)

// flakyServer serves a handler on a fixed loopback address that can be
// taken down (the port closed: connection refused) and brought back.
type flakyServer struct {
	tb   testing.TB
	h    http.Handler
	addr string
	mu   sync.Mutex
	srv  *http.Server
}

func newFlakyServer(tb testing.TB, h http.Handler) *flakyServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &flakyServer{tb: tb, h: h, addr: ln.Addr().String()}
	f.serve(ln)
	tb.Cleanup(f.Down)
	return f
}

// URL is the server's base URL, the same whether it is up or down.
func (f *flakyServer) URL() string { return "http://" + f.addr }

func (f *flakyServer) serve(ln net.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srv = &http.Server{Handler: f.h, ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln)
}

// Down closes the port and every connection.
func (f *flakyServer) Down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

// Up listens on the same address again.
func (f *flakyServer) Up() {
	f.tb.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.tb.Fatalf("listening again on %s: %v", f.addr, err)
	}
	f.serve(ln)
}

// rpcFault is how the proxy mistreats a JSON-RPC call.
type rpcFault int

const (
	faultNone rpcFault = iota
	// faultSlow answers nothing until the caller gives up.
	faultSlow
	// faultHTML answers 502 with an HTML page, as a proxy before a dead node.
	faultHTML
	// faultBadJSON answers 200 with truncated JSON.
	faultBadJSON
	// faultRPCError answers a JSON-RPC error of the node's own.
	faultRPCError
	// faultRefuseTx answers the node's refusal of a transaction.
	faultRefuseTx
	// faultLostAnswer passes the call to the chain, then answers garbage:
	// the node acted, the caller cannot know.
	faultLostAnswer
	// faultSlowAnswer passes the call to the chain, then answers nothing
	// until the caller gives up.
	faultSlowAnswer
)

var faultNames = map[rpcFault]string{faultSlow: "slow", faultHTML: "html", faultBadJSON: "bad json",
	faultRPCError: "rpc error", faultRefuseTx: "tx refused", faultLostAnswer: "lost answer", faultSlowAnswer: "slow answer"}

// rpcProxy is a JSON-RPC over HTTP endpoint in front of a chain's
// in-process RPC client (or of nothing), mistreating the methods told.
type rpcProxy struct {
	chain *rpc.Client
	mu    sync.Mutex
	// faults holds the fault of each method ("*": every method) and how
	// many more calls it hits (negative: every call); hits counts the
	// calls faulted since the last clear.
	faults map[string]*faultCount
	hits   int
}

type faultCount struct {
	faults []rpcFault // met in turn
	left   int
	next   int
}

func newRPCProxy(chain *rpc.Client) *rpcProxy {
	return &rpcProxy{chain: chain, faults: map[string]*faultCount{}}
}

// set makes the next n calls of method (n < 0: every call) meet the
// faults, in turn.
func (p *rpcProxy) set(method string, n int, faults ...rpcFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[method] = &faultCount{faults: faults, left: n}
}

// clear removes every fault and returns how many calls were faulted.
func (p *rpcProxy) clear() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = map[string]*faultCount{}
	hits := p.hits
	p.hits = 0
	return hits
}

func (p *rpcProxy) fault(method string) rpcFault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range []string{method, "*"} {
		if f := p.faults[m]; f != nil && f.left != 0 {
			f.left--
			p.hits++
			f.next++
			return f.faults[(f.next-1)%len(f.faults)]
		}
	}
	return faultNone
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

func (p *rpcProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "single JSON-RPC requests only", http.StatusBadRequest)
		return
	}
	hang := func() {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch p.fault(req.Method) {
	case faultSlow:
		hang()
		return
	case faultHTML:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		return
	case faultBadJSON:
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`)
		return
	case faultRPCError:
		writeRPCError(w, req.ID, -32603, "internal error", nil)
		return
	case faultRefuseTx:
		writeRPCError(w, req.ID, -32000, "insufficient funds for gas * price + value", nil)
		return
	case faultLostAnswer:
		p.forward(context.WithoutCancel(r.Context()), req)
		io.WriteString(w, "<html>upstream reset</html>")
		return
	case faultSlowAnswer:
		p.forward(context.WithoutCancel(r.Context()), req)
		hang()
		return
	}
	result, err := p.forward(r.Context(), req)
	if err != nil {
		var re rpc.Error
		var de rpc.DataError
		code, data := -32603, any(nil)
		if errors.As(err, &re) {
			code = re.ErrorCode()
		}
		if errors.As(err, &de) {
			data = de.ErrorData()
		}
		writeRPCError(w, req.ID, code, err.Error(), data)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

func (p *rpcProxy) forward(ctx context.Context, req rpcRequest) (json.RawMessage, error) {
	if p.chain == nil {
		return nil, errors.New("no chain behind this proxy")
	}
	args := make([]any, len(req.Params))
	for i, a := range req.Params {
		args[i] = a
	}
	var result json.RawMessage
	err := p.chain.CallContext(ctx, &result, req.Method, args...)
	return result, err
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}
