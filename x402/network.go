package x402

import (
	"fmt"
	"math/big"
	"strings"
)

// v1Networks maps the v1 network names this service knows to CAIP-2 ids.
var v1Networks = map[string]string{
	"base":         "eip155:8453",
	"base-sepolia": "eip155:84532",
}

// CanonicalNetwork returns the CAIP-2 id of a network given either as a
// CAIP-2 id ("eip155:84532") or as a v1 name ("base-sepolia").
func CanonicalNetwork(name string) string {
	if id, ok := v1Networks[strings.ToLower(name)]; ok {
		return id
	}
	return name
}

// V1Network returns the v1 name of a CAIP-2 network id, or the id itself
// when the network has no v1 name.
func V1Network(caip2 string) string {
	for name, id := range v1Networks {
		if id == caip2 {
			return name
		}
	}
	return caip2
}

// ChainID returns the EVM chain id of a network named either way; it fails
// for anything that is not an eip155 network.
func ChainID(network string) (*big.Int, error) {
	id := CanonicalNetwork(network)
	ref, ok := strings.CutPrefix(id, "eip155:")
	if !ok {
		return nil, fmt.Errorf("network %q is not an EVM network (want eip155:<chain id>, base or base-sepolia)", network)
	}
	n, ok := new(big.Int).SetString(ref, 10)
	if !ok || n.Sign() <= 0 || ref[0] == '0' {
		return nil, fmt.Errorf("network %q has no valid chain id", network)
	}
	return n, nil
}
