package chain

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// multicall3 is the canonical Multicall3, at the same address on every
// chain that has it.
var multicall3 = common.HexToAddress("0xcA11bde05977b3631167028862bE2a173976CA11")

// multicallABI is the part of Multicall3 this package calls.
var multicallABI = mustABI(`[
{"type":"function","name":"tryAggregate","stateMutability":"payable","inputs":[
 {"name":"requireSuccess","type":"bool"},
 {"name":"calls","type":"tuple[]","components":[{"name":"target","type":"address"},{"name":"callData","type":"bytes"}]}],
 "outputs":[{"name":"returnData","type":"tuple[]","components":[{"name":"success","type":"bool"},{"name":"returnData","type":"bytes"}]}]}
]`)

// mcCall and mcResult are Multicall3's Call and Result tuples.
type mcCall struct {
	Target   common.Address
	CallData []byte
}

type mcResult struct {
	Success    bool
	ReturnData []byte
}

// errGarbled marks an answer that is not what the contracts return: a
// contract missing at its canonical address, or a node answering garbage.
var errGarbled = errors.New("the answer is not the contracts'")

// rpcError marks a read that failed at the RPC itself (unreachable, slow,
// a JSON-RPC error), as opposed to a garbled answer.
type rpcError struct{ err error }

func (e rpcError) Error() string { return e.err.Error() }
func (e rpcError) Unwrap() error { return e.err }

// tryAggregate makes calls in one eth_call of Multicall3's
// tryAggregate(false, calls) and returns each call's return data, in
// order. A failed call is an error wrapping errGarbled: the views read
// this way never revert on a chain that has the contracts. An RPC failure
// is an rpcError.
func (s *Settler) tryAggregate(ctx context.Context, calls []mcCall) ([][]byte, error) {
	data, err := multicallABI.Pack("tryAggregate", false, calls)
	if err != nil {
		return nil, err
	}
	cctx, cancel := s.call(ctx)
	to := multicall3
	out, err := s.backend.CallContract(cctx, ethereum.CallMsg{To: &to, Data: data}, nil)
	cancel()
	if err != nil {
		return nil, rpcError{s.timedOut(err)}
	}
	var results []mcResult
	if err := multicallABI.UnpackIntoInterface(&results, "tryAggregate", out); err != nil {
		return nil, fmt.Errorf("%w: Multicall3's tryAggregate at %s: %w", errGarbled, multicall3.Hex(), err)
	}
	if len(results) != len(calls) {
		return nil, fmt.Errorf("%w: Multicall3 answered %d results to %d calls", errGarbled, len(results), len(calls))
	}
	ret := make([][]byte, len(results))
	for i, r := range results {
		if !r.Success {
			return nil, fmt.Errorf("%w: call %d of the batch (to %s, selector %#x) failed", errGarbled, i,
				calls[i].Target.Hex(), calls[i].CallData[:min(4, len(calls[i].CallData))])
		}
		ret[i] = r.ReturnData
	}
	return ret, nil
}
