package ledger

// TEMPORARY: the channel types piece 4 (branch chledger) defines; removed at its merge.

import (
	"errors"
	"math/big"
	"time"

	"sandboxd/x402/channel"
)

type Channel struct {
	ID                               string
	Network                          string
	Config                           channel.Config
	State                            string
	Charged                          *big.Int
	VoucherMax                       *big.Int
	VoucherSig                       []byte
	Balance, Claimed, WithdrawAmount *big.Int
	WithdrawAt                       int64
	RefundNonce                      *big.Int
	SyncedAt                         time.Time
	Hold                             *Hold
	Calls                            int64
	CreatedAt, UpdatedAt             time.Time
	LastChargedAt                    time.Time
}

type Hold struct {
	ID          string
	Amount, Max *big.Int
	Sig         []byte
	Replica     string
	Until       time.Time
}

type Mirror struct {
	Balance, Claimed, WithdrawAmount *big.Int
	WithdrawAt                       int64
	RefundNonce                      *big.Int
}

const (
	ChannelOpen      = "open"
	ChannelRefunding = "refunding"
	ChannelClosed    = "closed"
)

var (
	ErrNoChannel    = errors.New("no such channel")
	ErrChannelMoved = errors.New("channel moved")
	ErrHoldLost     = errors.New("hold lost")
)

type ClaimerState struct {
	Replica                        string
	Since, RequestedAt, LastPassAt time.Time
}

type Op struct {
	ID, Kind, Replica, Status, TxHash string
	Channels                          int
	Amount                            *big.Int
	GasUsed                           uint64
	Reason                            string
	CreatedAt, UpdatedAt              time.Time
}
