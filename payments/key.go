package payments

import (
	"crypto/ecdsa"
	"fmt"
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

// LoadKey reads a file holding one hex private key.
func LoadKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
