package chain

import (
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// designSelectors are the selectors and topics of the escrow as the design
// (docs/design/channels.md §3, Appendix A) took them from the official
// ABI, so that our ABI and the stand-in are held to the real escrow too.
var designSelectors = map[string]string{
	"deposit": "0x140f1e75", "claim": "0x29237b0c", "claimWithSignature": "0xe43ce1f2", "settle": "0x9db32a8f",
	"refund": "0xdce4bfae", "refundWithSignature": "0xb77433e9", "multicall": "0xac9650d8",
	"channels": "0x7a7ebd7b", "pendingWithdrawals": "0xb7f06ebe", "refundNonce": "0xf0dc792e", "receivers": "0x21ff6389",
}

var designTopics = map[string]string{
	"Deposited": "0x6c2a09353b5e75e70d0b9778b80a413809bb235d46c211811c474b3346791d89",
	"Claimed":   "0x36bd546bb573e8921fdbfd934bbed62d872796b01792cd240cce27f79dd3eddd",
	"Settled":   "0x7337b4386b690fdb8ba66905b92b9d45d33bc6626ee2620c905fb150ec0cc47d",
	"Refunded":  "0xa84286cf8ebc7903a663c77c8d99aa92b600d4c2fcca872a5d4a663db4eb394b",
}

var designErrors = map[string]string{
	"InvalidChannel": "0xea3a9a39", "ZeroDeposit": "0x56316e87", "DepositOverflow": "0x1132981b",
	"InvalidSignature": "0x8baa579f", "NotReceiverAuthorizer": "0xf5e2237d", "NotAuthorizedToClaim": "0xdefb7069",
	"NotAuthorizedToRefund": "0x7864f008", "ClaimExceedsCeiling": "0xf1789775", "ClaimExceedsBalance": "0x7d8242b6",
	"WithdrawalAlreadyPending": "0xa2aed0f0", "WithdrawalNotPending": "0x3a0a1ca6",
	"NotAuthorizedToFinalizeWithdraw": "0x15f969d5", "WithdrawDelayNotElapsed": "0xf3965827",
	"NothingToWithdraw": "0xd0d04f60", "WithdrawAmountExceedsAvailable": "0x6d3d5764",
	"WithdrawDelayOutOfRange": "0x4574fab6", "EmptyBatch": "0xc2e5347d", "DepositCollectionFailed": "0xeb43592c",
	"InvalidCollector": "0x18b1afd4", "InvalidRefundNonce": "0x164f1afe", "ZeroRefund": "0xd758525c",
}

// TestEscrowABIMatchesArtifact: every function and event of our
// hand-written escrow and Multicall3 ABIs has the selector (or topic),
// argument and return layout of the compiled contracts in
// payments/testdata and of the design's table.
func TestEscrowABIMatchesArtifact(t *testing.T) {
	compiled := mustArtifact(t, "escrow").ABI
	for name, m := range escrowABI.Methods {
		cm, ok := compiled.Methods[name]
		switch {
		case !ok:
			t.Errorf("%s: not in escrow.json", name)
		case cm.Sig != m.Sig || hexutil.Encode(m.ID) != hexutil.Encode(cm.ID):
			t.Errorf("%s: ours %s %x, compiled %s %x", name, m.Sig, m.ID, cm.Sig, cm.ID)
		case hexutil.Encode(m.ID) != designSelectors[name]:
			t.Errorf("%s: selector %x, the design's %s", name, m.ID, designSelectors[name])
		case len(cm.Outputs) != len(m.Outputs):
			t.Errorf("%s: %d outputs, compiled %d", name, len(m.Outputs), len(cm.Outputs))
		}
		for i := range min(len(cm.Outputs), len(m.Outputs)) {
			if got, want := m.Outputs[i].Type.String(), cm.Outputs[i].Type.String(); got != want {
				t.Errorf("%s: output %d is %s, compiled %s", name, i, got, want)
			}
		}
	}
	if len(designSelectors) != len(escrowABI.Methods) {
		t.Errorf("%d methods, %d in the design table", len(escrowABI.Methods), len(designSelectors))
	}
	for name, e := range escrowABI.Events {
		ce, ok := compiled.Events[name]
		if !ok || ce.ID != e.ID || e.ID.Hex() != designTopics[name] || len(ce.Inputs) != len(e.Inputs) {
			t.Errorf("event %s: ours %s %s, compiled %s %s, the design's %s", name, e.Sig, e.ID.Hex(), ce.Sig, ce.ID.Hex(), designTopics[name])
			continue
		}
		for i, in := range e.Inputs {
			if in.Indexed != ce.Inputs[i].Indexed || in.Type.String() != ce.Inputs[i].Type.String() {
				t.Errorf("event %s: input %d %s indexed %v, compiled %s indexed %v", name, i, in.Type, in.Indexed,
					ce.Inputs[i].Type, ce.Inputs[i].Indexed)
			}
		}
	}

	mc := mustArtifact(t, "multicall3").ABI
	ours, theirs := multicallABI.Methods["tryAggregate"], mc.Methods["tryAggregate"]
	if ours.Sig != theirs.Sig || ours.Outputs[0].Type.String() != theirs.Outputs[0].Type.String() ||
		hexutil.Encode(ours.ID) != hexutil.Encode(crypto.Keccak256([]byte("tryAggregate(bool,(address,bytes)[])"))[:4]) {
		t.Errorf("tryAggregate: ours %s → %s, compiled %s → %s", ours.Sig, ours.Outputs[0].Type, theirs.Sig, theirs.Outputs[0].Type)
	}
}

// TestEscrowErrorNames: the selector of every error we name is the
// compiled contracts' and the design's, and every error the escrow and the
// collector can revert with has a name, so a refusal's message names it.
func TestEscrowErrorNames(t *testing.T) {
	compiled := mustArtifact(t, "escrow").ABI
	collector := mustArtifact(t, "collector").ABI
	named := map[string]bool{}
	for sel, name := range errorNames {
		named[name] = true
		want, ok := compiled.Errors[name]
		if !ok {
			want, ok = collector.Errors[name]
		}
		if !ok || [4]byte(want.ID[:4]) != sel {
			t.Errorf("error %s: selector %x, compiled %v", name, sel, want.ID)
		}
		if d, ok := designErrors[name]; ok && hexutil.Encode(sel[:]) != d {
			t.Errorf("error %s: selector %x, the design's %s", name, sel, d)
		}
	}
	for name := range designErrors {
		if !named[name] {
			t.Errorf("the design's error %s has no name in escrowErrors", name)
		}
	}
	for _, errs := range []map[string]abi.Error{compiled.Errors, collector.Errors} {
		for name := range errs {
			if !named[name] {
				t.Errorf("the contracts' error %s has no name in escrowErrors", name)
			}
		}
	}
}
