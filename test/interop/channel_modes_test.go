package interop

import (
	"strings"
	"testing"
)

// TestChannelFacilitatorDelegated: sandboxd settles through the official facilitator, which
// holds the receiver authorizer's key and advertises it in /supported: sandboxd quotes that
// authorizer, has the facilitator collect the deposit (and checks its receipt on chain
// itself), and sends it the claim, the sweep and the refund unsigned for it to sign. The
// money moves as in TestChannelPaysOnchain (checkChannelPays). A payer without the tokens
// it would deposit is refused by the facilitator's /verify, nothing run (as on chain: see
// TestChannelHostile).
func TestChannelFacilitatorDelegated(t *testing.T) {
	testChannelFacilitator(t, "delegated")
}

// TestChannelFacilitatorKeyFile: sandboxd settles through the official facilitator, started
// without an authorizer key (its /supported advertises none), and holds the receiver
// authorizer's key itself (payments.channels.authorizer_key_file): it signs the claim and the
// refund it sends the facilitator. The money moves as in TestChannelPaysOnchain; an
// underfunded payer is refused as under delegation.
func TestChannelFacilitatorKeyFile(t *testing.T) {
	testChannelFacilitator(t, "keyfile")
}

func testChannelFacilitator(t *testing.T, mode string) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	svc := startService(t, instance("channel-"+mode), true, append(channelEnv(t, c, mode, nil), claimPromptly...)...)
	log := svc.Log()
	if !strings.Contains(log, "channels offered") || !strings.Contains(log, channelAuthorizer.address) {
		t.Fatalf("sandboxd does not offer channels with %s as the receiver authorizer:\n%s", channelAuthorizer.address, log)
	}
	checkChannelPays(t, c, svc)
	testChannelUnderfunded(t, c, svc, nil)
}
