package channel_test

import (
	"encoding/json"
	"strings"
	"testing"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// officialPayload returns the payload member of the official client's
// payment JSON, as sent.
func officialPayload(tb testing.TB, paymentJSON string) string {
	tb.Helper()
	var p struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal([]byte(paymentJSON), &p); err != nil {
		tb.Fatal(err)
	}
	return string(p.Payload)
}

// replaceOnce replaces the first old in s by new, failing when s lacks it.
func replaceOnce(tb testing.TB, s, old, new string) string {
	tb.Helper()
	if !strings.Contains(s, old) {
		tb.Fatalf("%s is not in %s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

// withMember returns the JSON object payload with its member key set to raw.
func withMember(tb testing.TB, payload, key, raw string) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		tb.Fatal(err)
	}
	m[key] = json.RawMessage(raw)
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestDecodeStrict: the official payloads decode; each edit below makes
// one read differently by another JSON reader, or a number or hex value
// non-canonical, and is refused as undecodable (400), except the types a
// payer may not send and a refund of nothing, which are refusals (402).
func TestDecodeStrict(t *testing.T) {
	c := mustVectors(t).Cases[0]
	voucher := officialPayload(t, c.Voucher.JSON)
	deposit := officialPayload(t, c.Deposit.JSON)
	refund := officialPayload(t, c.Refunds[1].JSON)
	max := `"maxClaimableAmount":"4000"`
	delay := `"withdrawDelay":900`
	payer := `"payer":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8"`
	cases := []struct {
		name, payload, reason string
		ok                    bool
	}{
		{"official voucher", voucher, "", true},
		{"official deposit", deposit, "", true},
		{"official refund", refund, "", true},
		{"lower-case addresses", replaceOnce(t, voucher, payer, strings.ToLower(payer)), "", true},
		{"duplicate type", replaceOnce(t, voucher, `"type":"voucher"`, `"type":"voucher","type":"refund"`), "", false},
		{"duplicate amount", replaceOnce(t, voucher, max, max+`,"maxClaimableAmount":"1"`), "", false},
		{"duplicate in another case", replaceOnce(t, voucher, payer, payer+`,"Payer":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8"`), "", false},
		{"misspelled key", replaceOnce(t, voucher, `"salt"`, `"Salt"`), "", false},
		{"unknown key", replaceOnce(t, voucher, max, max+`,"memo":"x"`), "", false},
		{"refund amount on a voucher", replaceOnce(t, voucher, `"type":"voucher"`, `"type":"voucher","amount":"1"`), "", false},
		{"permit2 deposit", replaceOnce(t, deposit, `"erc3009Authorization"`, `"permit2Authorization"`), "", false},
		{"withdrawDelay as a string", replaceOnce(t, voucher, delay, `"withdrawDelay":"900"`), "", false},
		{"withdrawDelay 900.0", replaceOnce(t, voucher, delay, `"withdrawDelay":900.0`), "", false},
		{"withdrawDelay 9e2", replaceOnce(t, voucher, delay, `"withdrawDelay":9e2`), "", false},
		{"withdrawDelay over uint40", replaceOnce(t, voucher, delay, `"withdrawDelay":1099511627776`), "", false},
		{"amount 04000", replaceOnce(t, voucher, max, `"maxClaimableAmount":"04000"`), "", false},
		{"amount 4e3", replaceOnce(t, voucher, max, `"maxClaimableAmount":"4e3"`), "", false},
		{"amount -1", replaceOnce(t, voucher, max, `"maxClaimableAmount":"-1"`), "", false},
		{"amount a number", replaceOnce(t, voucher, max, `"maxClaimableAmount":4000`), "", false},
		{"amount over uint128", replaceOnce(t, voucher, max, `"maxClaimableAmount":"340282366920938463463374607431768211456"`), "", false},
		{"amount uint128 max", replaceOnce(t, voucher, max, `"maxClaimableAmount":"340282366920938463463374607431768211455"`), "", true},
		{"bad checksum", replaceOnce(t, voucher, payer, `"payer":"0x70997970c51812dc3A010C7d01b50e0d17dc79C8"`), "", false},
		{"address without 0x", replaceOnce(t, voucher, payer, `"payer":"70997970C51812dc3A010C7d01b50e0d17dc79C8"`), "", false},
		{"short address", replaceOnce(t, voucher, payer, `"payer":"0x70997970C51812dc3A010C7d01b50e0d17dc79"`), "", false},
		{"short channel id", replaceOnce(t, voucher, `"channelId":"0xbf`, `"channelId":"0x`), "", false},
		{"odd-length signature", replaceOnce(t, voucher, `"signature":"0x`, `"signature":"0x0`), "", false},
		{"no voucher", `{"type":"voucher","channelConfig":{}}`, "", false},
		{"no type", replaceOnce(t, voucher, `"type":"voucher",`, ``), "", false},
		{"zero deposit", replaceOnce(t, deposit, `"amount":"10000"`, `"amount":"0"`), "", false},
		{"claim from a payer", `{"type":"claim","claims":[]}`, channel.ReasonPayloadType, false},
		{"settle from a payer", `{"type":"settle","receiver":"0x0000000000000000000000000000000000000001","token":"0x0000000000000000000000000000000000000002"}`, channel.ReasonPayloadType, false},
		{"refund amount null", replaceOnce(t, refund, `"amount":"1000"`, `"amount":null`), "", false},
		{"refund amount a number", replaceOnce(t, refund, `"amount":"1000"`, `"amount":1000`), "", false},
		{"voucher null", withMember(t, voucher, "voucher", `null`), "", false},
		{"channelConfig null", withMember(t, voucher, "channelConfig", `null`), "", false},
		{"refund of nothing", replaceOnce(t, refund, `"amount":"1000"`, `"amount":"0"`), channel.ReasonRefundAmount, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := channel.Decode([]byte(tc.payload))
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Decode: %v", err)
			case !tc.ok && err == nil:
				t.Fatalf("Decode took %s", tc.payload)
			case !tc.ok && x402.RejectReason(err, "") != tc.reason:
				t.Fatalf("Decode: %v (reason %q), want reason %q", err, x402.RejectReason(err, ""), tc.reason)
			}
		})
	}
}

// TestConfigJSON: a decoded config encodes as the official client sends
// it, so a re-encoded payload has the same channel id.
func TestConfigJSON(t *testing.T) {
	c := mustVectors(t).Cases[0]
	p := mustDecodePayment(t, c.Voucher.JSON)
	got, err := json.Marshal(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	var want, have map[string]any
	if err := json.Unmarshal(c.Config, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &have); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s = %v, want %v", k, have[k], v)
		}
	}
	if len(have) != len(want) {
		t.Errorf("encoded %s, want the keys of %s", got, c.Config)
	}
}

// TestPayloadRoundTrip: every official payload re-encodes to a payload
// that decodes to the same values, so what a facilitator is sent is what
// was verified.
func TestPayloadRoundTrip(t *testing.T) {
	for _, c := range mustVectors(t).Cases {
		for _, raw := range []string{c.Deposit.JSON, c.Voucher.JSON, c.Refunds[0].JSON, c.Refunds[1].JSON} {
			p := mustDecodePayment(t, raw)
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := channel.Decode(b)
			if err != nil {
				t.Fatalf("%s: the re-encoding %s does not decode: %v", c.Name, b, err)
			}
			again, err := json.Marshal(back)
			if err != nil || string(again) != string(b) {
				t.Fatalf("%s: %s re-encodes as %s, %v", c.Name, b, again, err)
			}
			if back.Config != p.Config || back.Voucher.ChannelID != p.Voucher.ChannelID {
				t.Fatalf("%s: round trip changed the channel: %+v", c.Name, back)
			}
		}
	}
}
