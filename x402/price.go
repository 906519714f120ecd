package x402

import (
	"fmt"
	"math/big"
	"strings"
)

// assetDecimals is the number of decimals of the priced asset (USDC has 6).
const assetDecimals = 6

// unitsPerToken is 10^assetDecimals, the atomic units in one asset unit.
var unitsPerToken = new(big.Int).Exp(big.NewInt(10), big.NewInt(assetDecimals), nil)

// ParsePrice converts a decimal price in asset units ("0.005") to atomic
// units (5000). It rejects signs, exponents, more than assetDecimals
// decimals, and anything not above zero.
func ParsePrice(s string) (*big.Int, error) {
	whole, frac, hasDot := strings.Cut(strings.TrimSpace(s), ".")
	if whole == "" || (hasDot && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return nil, fmt.Errorf("%q is not a decimal number such as 0.005", s)
	}
	if len(frac) > assetDecimals {
		return nil, fmt.Errorf("%q has %d decimals; the asset has %d", s, len(frac), assetDecimals)
	}
	digits := whole + frac + strings.Repeat("0", assetDecimals-len(frac))
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal number", s)
	}
	if n.Sign() <= 0 {
		return nil, fmt.Errorf("%q must be more than 0", s)
	}
	if n.Cmp(maxUint256) > 0 {
		return nil, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}

// FormatPrice renders atomic units as a decimal in asset units, the inverse
// of ParsePrice ("5000" -> "0.005").
func FormatPrice(atomic *big.Int) string {
	q, r := new(big.Int).QuoRem(atomic, unitsPerToken, new(big.Int))
	if r.Sign() == 0 {
		return q.String()
	}
	frac := strings.TrimRight(fmt.Sprintf("%0*s", assetDecimals, r.String()), "0")
	return q.String() + "." + frac
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
