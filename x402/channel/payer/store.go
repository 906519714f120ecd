package payer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// StatePath is the state file of the channels paid with the key in
// keyFile: beside it, named after it.
func StatePath(keyFile string) string { return keyFile + ".channels" }

// The states of a channel in the state file.
const (
	// StateOpen: the channel pays calls.
	StateOpen = "open"
	// StateRefunded: what was left of its balance was refunded; a deposit
	// opens it again.
	StateRefunded = "refunded"
)

// Channel is what the state file keeps of one channel: enough to sign its
// next voucher without reading the chain.
type Channel struct {
	// ID is the channel's id.
	ID common.Hash `json:"channelId"`
	// Network is the CAIP-2 network of the escrow it lives in.
	Network string `json:"network"`
	// Server is the origin (scheme://host[:port]) last paid through it.
	Server string `json:"server"`
	// Config is the channel's config (Go's decoding reads its members by
	// their names, as Config.MarshalJSON writes them).
	Config channel.Config `json:"config"`
	// Charged is what the seller has charged in all, as far as this payer
	// knows: the next voucher is Charged plus the price.
	Charged *big.Int `json:"charged"`
	// Balance is the escrow's gross balance of the channel (claims never
	// lower it), as the seller last reported it or as deposited.
	Balance *big.Int `json:"balance"`
	// VoucherMax and VoucherSignature are the last voucher signed and
	// taken (or adopted from the seller's proof).
	VoucherMax       *big.Int      `json:"voucherMax,omitempty"`
	VoucherSignature hexutil.Bytes `json:"voucherSignature,omitempty"`
	// State is StateOpen or StateRefunded.
	State string `json:"state"`
	// Updated is when the entry last changed.
	Updated time.Time `json:"updated"`
}

// Unspent is what the channel holds that was not charged, never below 0.
func (c *Channel) Unspent() *big.Int {
	u := new(big.Int).Sub(c.Balance, c.Charged)
	if u.Sign() < 0 {
		return new(big.Int)
	}
	return u
}

// stateFile is the state file's JSON.
type stateFile struct {
	Version  int        `json:"version"`
	Channels []*Channel `json:"channels"`
}

// Store is a payer's state file, held under an exclusive flock from
// OpenStore to Close, so that two calls with one key sign one voucher
// after the other, never two on the same total.
type Store struct {
	path string
	// f is the open state file this Store holds the lock on.
	f *os.File
	// Channels are the file's channels, changed in place and written by
	// Save.
	Channels []*Channel
}

// OpenStore opens the state file at path, creating it (mode 600) if need
// be, waits for its lock until ctx ends, and reads it. A file group or
// others may read or write is refused, as the key file is: who can change
// a running total can make this payer sign the vouchers it chooses. Files
// left by a writer that died before renaming its copy into place are
// removed.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	for {
		f, err := openPrivate(path, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, err
		}
		if err := lock(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
		// The holder before us may have replaced the file: then the lock
		// we hold is on the old one, and the new one is to be locked.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			s := &Store{path: path, f: f}
			s.removeStale()
			if s.Channels, err = readState(f, path); err != nil {
				f.Close()
				return nil, err
			}
			return s, nil
		}
		f.Close()
	}
}

// ReadState reads the state file at path without locking it (each write
// replaces it whole); no file is no channels.
func ReadState(path string) ([]*Channel, error) {
	f, err := openPrivate(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readState(f, path)
}

// Find returns the channel id, or nil.
func (s *Store) Find(id common.Hash) *Channel {
	for _, c := range s.Channels {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Save writes the channels to a new file beside the state file, locked
// before it is renamed over it: a crash at any point leaves the old file
// or the new one whole, and a call waiting for the lock finds the new one.
func (s *Store) Save() error {
	sort.Slice(s.Channels, func(i, j int) bool { return s.Channels[i].ID.Hex() < s.Channels[j].ID.Hex() })
	data, err := json.MarshalIndent(stateFile{Version: 1, Channels: s.Channels}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+".tmp-*") // mode 600
	if err != nil {
		return fmt.Errorf("saving the channel state: %w", err)
	}
	err = syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the channel state to %s: %w", s.path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself survives a power loss
		d.Close()
	}
	s.f.Close()
	s.f = tmp
	return nil
}

// Close releases the lock.
func (s *Store) Close() error { return s.f.Close() }

// removeStale removes the copies of writers that died before renaming
// them; only the lock's holder writes, so none is being written.
func (s *Store) removeStale() {
	dir, prefix := filepath.Dir(s.path), filepath.Base(s.path)+".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// openPrivate opens path with flag, refusing anything but a regular file
// that only its owner may read and write.
func openPrivate(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		err = fmt.Errorf("%s holds channel state (running totals, vouchers) but group or others may read or write it "+
			"(mode %04o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lock takes an exclusive flock on f, polling until ctx ends: flock's own
// wait cannot be cancelled.
func lock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another call with this key, which holds %s: %w", f.Name(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readState reads and checks the channels of an open state file: each
// channel's id must be its config's.
func readState(f *os.File, path string) ([]*Channel, error) {
	raw, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil || len(strings.TrimSpace(string(raw))) == 0 {
		return nil, err
	}
	var sf stateFile
	if err := json.Unmarshal(raw, &sf); err != nil {
		return nil, fmt.Errorf("%s does not decode: %w", path, err)
	}
	for _, c := range sf.Channels {
		chainID, err := x402.ChainID(c.Network)
		if err == nil && (c.Charged == nil || c.Balance == nil) {
			err = errors.New("no charged total or balance")
		}
		if err == nil {
			var id common.Hash
			if id, err = channel.ID(c.Config, chainID); err == nil && id != c.ID {
				err = fmt.Errorf("its config's id is %s", id.Hex())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: channel %s: %w", path, c.ID.Hex(), err)
		}
	}
	return sf.Channels, nil
}
