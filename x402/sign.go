package x402

import (
	"crypto/ecdsa"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// SignAuthorization signs a as key's owner for the asset of req and returns
// the payload to send. a is signed as given: it is not checked against req.
func SignAuthorization(key *ecdsa.PrivateKey, req Requirements, a Authorization) (ExactPayload, error) {
	t, err := parseAuthorization(a)
	if err != nil {
		return ExactPayload{}, err
	}
	sig, err := signTransfer(key, req, t)
	if err != nil {
		return ExactPayload{}, err
	}
	return ExactPayload{Signature: hexutil.Encode(sig), Authorization: a}, nil
}

// NewAuthorization returns the authorization a payer gives for req: the
// price from key's address to req.PayTo, valid from 0 until now plus
// req.MaxTimeoutSeconds, with a random 32-byte nonce.
func NewAuthorization(key *ecdsa.PrivateKey, req Requirements, now time.Time) (Authorization, error) {
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return Authorization{}, fmt.Errorf("nonce: %w", err)
	}
	timeout := req.MaxTimeoutSeconds
	if timeout <= 0 {
		timeout = 60
	}
	return Authorization{
		From:        crypto.PubkeyToAddress(key.PublicKey).Hex(),
		To:          req.PayTo,
		Value:       req.Amount,
		ValidAfter:  "0",
		ValidBefore: strconv.FormatInt(now.Unix()+int64(timeout), 10),
		Nonce:       hexutil.Encode(nonce[:]),
	}, nil
}
