package x402

import (
	"crypto/ecdsa"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
)

// ParseKey parses a hex secp256k1 private key, with or without 0x.
func ParseKey(s string) (*ecdsa.PrivateKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	key, err := crypto.HexToECDSA(s)
	if err != nil {
		return nil, fmt.Errorf("not a hex private key: %w", err)
	}
	return key, nil
}

// LoadKey reads a file holding one hex private key. A file that group or
// others may read or write (mode & 0o077) is refused: whoever reads the key
// spends from its account.
func LoadKey(path string) (*ecdsa.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("%s holds a private key but group or others may read it (mode %04o): run chmod 600 %s", path, mode, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
