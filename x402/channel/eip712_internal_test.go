package channel

import (
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// TestTypeHashes: the escrow's type hashes are those of the
// x402BatchSettlement contract (docs/design/channels.md, Appendix A).
func TestTypeHashes(t *testing.T) {
	// In the order of escrowTypeStrings.
	want := []string{
		"0x1c9a06ceab9b0ebbd3301dc56c9111bb6d9af421356dc9ccb3b7084c755db308", "0x1e1bd6ff84c3e0d9029a292b212e039c0ca97ec497c55191a4a5874294609a69",
		"0xbe23ad087435072cd69b49cc5b92de10ee610fce7ae0ab428307972d764bb216", "0x42bd57c010b870c2e96203c66341f28a6a19b4d56a74533a8eb5f706b9fd6d57",
		"0x30b9a0367528fca13c3e8ec6134c3113f1887ebe7a1ad61de0955aac288b0cf5",
	}
	td := apitypes.TypedData{Types: escrowTypes}
	for i, def := range escrowTypeStrings {
		name, _, _ := strings.Cut(def, "(")
		if got := common.BytesToHash(td.TypeHash(name)); got != common.HexToHash(want[i]) {
			t.Errorf("%s type hash %s, want %s", name, got, want[i])
		}
	}
}

// TestDomainSeparators: the escrow's domain separators are the official
// client's (testdata/vectors.json) on Base Sepolia and Base.
func TestDomainSeparators(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		DomainSeparators map[string]string `json:"domainSeparators"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.DomainSeparators) == 0 {
		t.Fatal("no domain separators in the vectors")
	}
	for chain, want := range v.DomainSeparators {
		id, _ := new(big.Int).SetString(chain, 10)
		domain := apitypes.TypedDataDomain{Name: domainName, Version: domainVersion,
			ChainId: (*math.HexOrDecimal256)(id), VerifyingContract: Escrow.Hex()}
		td := apitypes.TypedData{Types: escrowTypes, Domain: domain}
		got, err := td.HashStruct("EIP712Domain", domain.Map())
		if err != nil || common.BytesToHash(got) != common.HexToHash(want) {
			t.Errorf("chain %s: domain separator %x, %v, want %s", chain, got, err, want)
		}
	}
}
