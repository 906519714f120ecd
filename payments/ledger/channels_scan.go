package ledger

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd"
)

// channelColumns are the columns scanChannel reads, in its order.
const channelColumns = `channel_id, network, payer, payer_authorizer, receiver, receiver_authorizer, token,
	withdraw_delay, salt, state, charged, voucher_max, voucher_sig, balance, claimed, withdraw_amount, withdraw_at,
	refund_nonce, synced_at, pending_id, pending_amount, pending_max, pending_sig, pending_replica, pending_until,
	calls, created_at, updated_at, last_charged_at`

// scanChannel reads a row of channelColumns.
func scanChannel(s interface{ Scan(...any) error }) (Channel, error) {
	var c Channel
	var payer, payerAuth, receiver, receiverAuth, token, salt string
	var charged, vmax, vsig, balance, claimed, wamount, rnonce, synced string
	var pid, pamount, pmax, psig, preplica, puntil, created, updated, last string
	var delay int64
	if err := s.Scan(&c.ID, &c.Network, &payer, &payerAuth, &receiver, &receiverAuth, &token, &delay, &salt,
		&c.State, &charged, &vmax, &vsig, &balance, &claimed, &wamount, &c.WithdrawAt, &rnonce, &synced,
		&pid, &pamount, &pmax, &psig, &preplica, &puntil, &c.Calls, &created, &updated, &last); err != nil {
		return Channel{}, err
	}
	c.Config.Payer, c.Config.PayerAuthorizer = common.HexToAddress(payer), common.HexToAddress(payerAuth)
	c.Config.Receiver, c.Config.ReceiverAuthorizer = common.HexToAddress(receiver), common.HexToAddress(receiverAuth)
	c.Config.Token, c.Config.Salt, c.Config.WithdrawDelay = common.HexToAddress(token), common.HexToHash(salt), uint64(delay)
	var p amounts
	c.Charged, c.VoucherMax, c.VoucherSig = p.parse(charged), p.parse(vmax), p.sig(vsig)
	c.Balance, c.Claimed, c.WithdrawAmount = p.parse(balance), p.parse(claimed), p.parse(wamount)
	c.RefundNonce, c.SyncedAt = p.parse(rnonce), parseStamp(synced)
	if pid != "" {
		c.Hold = &Hold{ID: pid, Amount: p.parse(pamount), Max: p.parse(pmax), Sig: p.sig(psig), Replica: preplica,
			Until: parseStamp(puntil)}
	}
	c.CreatedAt, c.UpdatedAt, c.LastChargedAt = parseStamp(created), parseStamp(updated), parseStamp(last)
	if p.err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", c.ID, p.err)
	}
	return c, nil
}

// amounts parses a row's stored amounts and signatures, keeping the first
// error.
type amounts struct{ err error }

// parse reads a canonical decimal amount.
func (p *amounts) parse(s string) *big.Int {
	n, err := parseAmount(s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n
}

// sig reads a stored signature, nil for none.
func (p *amounts) sig(s string) []byte {
	if s == "" {
		return nil
	}
	b, err := hexutil.Decode(s)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("stored signature %q: %w", s, err)
	}
	return b
}

// parseAmount reads a canonical decimal amount.
func parseAmount(s string) (*big.Int, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int), fmt.Errorf("stored amount %q is not a decimal number", s)
	}
	return n, nil
}

// amountText is the stored spelling of an amount: canonical decimal, nil 0.
func amountText(n *big.Int) string {
	if n == nil {
		return "0"
	}
	return n.String()
}

// sigText is the stored spelling of a signature: 0x and lower-case hex, or
// empty.
func sigText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return hexutil.Encode(b)
}

// parseStamp reads a ledger stamp; empty is the zero time.
func parseStamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// stampOrEmpty is t's stamp, or empty for the zero time.
func stampOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatStamp(t)
}

// limitClause is the LIMIT of n rows, none for 0.
func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(n)
}

// channelKey is a channel id as stored (lower case), checked to be 0x and
// 64 hex digits.
func channelKey(op, id string) (string, error) {
	k := key(id)
	if len(k) != 66 || !strings.HasPrefix(k, "0x") || strings.Trim(k[2:], "0123456789abcdef") != "" {
		return "", sandboxd.Errorf(sandboxd.CodeInternal, op, "channel id %q is not 0x and 64 hex digits", id)
	}
	return k, nil
}
