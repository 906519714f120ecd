package chain

import (
	"context"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// maxBumps bounds how often one settlement transaction is replaced.
const maxBumps = 3

// bumpPercent raises both fee fields of a replacement; nodes take a
// replacement only at 10 % more or above.
const bumpPercent = 25

// nonceReader is the optional mined-nonce query the stuck-transaction check
// needs (every ethclient has it).
type nonceReader interface {
	NonceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (uint64, error)
}

// sentTx follows one settlement transaction through its replacements.
type sentTx struct {
	tx     *types.Transaction // the latest version sent
	hashes []common.Hash      // every version's hash; any of them may be mined
	sentAt time.Time          // when the latest version was sent
	bumps  int
}

func newSentTx(tx *types.Transaction) *sentTx {
	return &sentTx{tx: tx, hashes: []common.Hash{tx.Hash()}, sentAt: time.Now()}
}

// maybeBump replaces a settlement transaction that is stuck: unmined for
// bumpAfter while at the head of the relayer's queue (the chain's mined
// nonce is its own, so it waits behind nothing), as when its fees fell
// below the base fee. The replacement has the same nonce, gas and data and
// fees raised by bumpPercent (or the current ones, if higher), so exactly
// one version can be mined and every later settlement stops waiting
// behind it.
func (s *Settler) maybeBump(ctx context.Context, log *slog.Logger, st *sentTx) {
	reader, ok := s.backend.(nonceReader)
	if !ok || st.bumps >= maxBumps || time.Since(st.sentAt) < s.bumpAfter {
		return
	}
	cctx, cancel := s.call(ctx)
	mined, err := reader.NonceAt(cctx, s.relayer, nil)
	cancel()
	if err != nil || mined != st.tx.Nonce() {
		return
	}
	fees, err := s.fees(ctx)
	if err != nil {
		return
	}
	old := st.tx
	var inner types.TxData
	switch f := fees.(type) {
	case *types.DynamicFeeTx:
		tip, feeCap := maxBig(f.GasTipCap, raised(old.GasTipCap())), maxBig(f.GasFeeCap, raised(old.GasFeeCap()))
		inner = &types.DynamicFeeTx{ChainID: s.chainID, Nonce: old.Nonce(), Gas: old.Gas(), To: old.To(), Data: old.Data(),
			GasTipCap: tip, GasFeeCap: maxBig(feeCap, tip)}
	case *types.LegacyTx:
		inner = &types.LegacyTx{Nonce: old.Nonce(), Gas: old.Gas(), To: old.To(), Data: old.Data(),
			GasPrice: maxBig(f.GasPrice, raised(old.GasPrice()))}
	}
	st.bumps++
	st.sentAt = time.Now()
	signed, err := types.SignNewTx(s.key, s.signer, inner)
	if err != nil {
		return
	}
	cctx, cancel = s.call(ctx)
	err = s.backend.SendTransaction(cctx, signed)
	cancel()
	if err != nil && !mayHaveArrived(err) {
		log.Warn("replacing a stuck settlement transaction failed", "tx", old.Hash().Hex(), "err", err)
		return
	}
	st.tx, st.hashes = signed, append(st.hashes, signed.Hash())
	log.Warn("settlement transaction stuck at the head of the relayer's queue; replaced with higher fees",
		"tx", old.Hash().Hex(), "replacement", signed.Hash().Hex(), "relayer_nonce", old.Nonce(), "bump", st.bumps)
}

// raised is v plus bumpPercent, plus one.
func raised(v *big.Int) *big.Int {
	r := new(big.Int).Mul(v, big.NewInt(100+bumpPercent))
	r.Div(r, big.NewInt(100))
	return r.Add(r, big.NewInt(1))
}

func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}
