package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// The escrow's events that tell its transactions apart (topic 0).
var (
	depositedTopic = crypto.Keccak256Hash([]byte("Deposited(bytes32,address,uint128,uint128)")).Hex()
	claimedTopic   = crypto.Keccak256Hash([]byte("Claimed(bytes32,address,uint128,uint128)")).Hex()
	settledTopic   = crypto.Keccak256Hash([]byte("Settled(address,address,address,uint128)")).Hex()
)

// claimWithin bounds the wait for the claimer's claim and sweep after the
// last call: its tick, two transactions and a block each.
const claimWithin = 90 * time.Second

// channelGas is what one channel cost on chain, from anvil's receipts:
// its deposit, the claims of its calls and the sweeps to payTo after them
// (one each, when the claimer claims once).
type channelGas struct {
	calls          int
	deposit        uint64
	claims, sweeps []uint64
	// claimed is the channel's total claimed on chain after its last claim.
	claimed uint64
}

// total is the channel's gas in all.
func (g channelGas) total() uint64 {
	t := g.deposit
	for _, n := range append(append([]uint64(nil), g.claims...), g.sweeps...) {
		t += n
	}
	return t
}

// perCall is the channel's gas a call.
func (g channelGas) perCall() float64 { return float64(g.total()) / float64(max(g.calls, 1)) }

// measureGas makes n voucher calls on one channel of key's payer at base
// (the first one its deposit), gap apart, waits until the service's
// claimer has claimed them all and swept them to payTo, and reads the gas
// of the transactions the relayer sent from their receipts on anvil.
func measureGas(ctx context.Context, chain *anvil, key, base string, n int, gap time.Duration) (channelGas, error) {
	g := channelGas{calls: n}
	from, err := chain.blockNumber()
	if err != nil {
		return g, err
	}
	steps := make([]payStep, n)
	for i := range steps {
		steps[i] = runStep(base, rowVoucher)
	}
	steps[0].kind = rowDeposit
	results, err := payRun(ctx, chain.rpc, key, "batch-settlement", gap, steps)
	if err != nil {
		return g, err
	}
	for i, res := range results {
		if err := res.check(false, paidAs(steps[i].kind, "batch-settlement"), channelPrice); err != nil {
			return g, fmt.Errorf("gas call %d: %w", i+1, err)
		}
	}
	deposit := results[0].tx()
	channelID := strings.ToLower(results[0].Settlement.Extra.ChannelState.ChannelID)
	for deadline := time.Now().Add(claimWithin); ; time.Sleep(time.Second) {
		done, err := g.read(chain, from, deposit, channelID, uint64(n*channelPrice))
		if err != nil || done {
			return g, err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return g, fmt.Errorf("no claim and sweep of channel %s within %v of the last call (gas so far %+v)",
				channelID, claimWithin, g)
		}
	}
}

// read finds, among the relayer's transactions after block from, the
// deposit (its hash from the client), the claims of channelID and the
// sweeps after them, by the events their receipts hold, and says whether
// all was claimed (total, in atomic units) and swept since.
func (g *channelGas) read(chain *anvil, from int64, deposit, channelID string, total uint64) (bool, error) {
	txs, err := chain.sentBy(relayerAccount.address, from)
	if err != nil {
		return false, err
	}
	g.deposit, g.claims, g.sweeps, g.claimed = 0, nil, nil, 0
	for _, tx := range txs {
		rc, err := chain.receipt(tx.Hash)
		if err != nil {
			return false, err
		}
		if !rc.OK {
			return false, fmt.Errorf("the relayer's transaction %s reverted", tx.Hash)
		}
		_, deposited := rc.find(depositedTopic, "")
		claim, claimed := rc.find(claimedTopic, channelID)
		_, swept := rc.find(settledTopic, "")
		switch {
		case strings.EqualFold(tx.Hash, deposit) && deposited:
			g.deposit = rc.GasUsed
		case claimed:
			g.claims, g.claimed, g.sweeps = append(g.claims, rc.GasUsed), claim.word(1), nil
		case swept && len(g.claims) > 0:
			g.sweeps = append(g.sweeps, rc.GasUsed)
		}
	}
	return g.deposit > 0 && g.claimed == total && len(g.sweeps) > 0, nil
}
