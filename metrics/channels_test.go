package metrics

import (
	"math/big"
	"testing"
	"time"
)

// TestChannelSeries: each op the channels' observer is told of counts in
// its own series by outcome (every outcome shown from the start), the gas
// of its receipts adds up by op, an unknown op is dropped, and the gauges
// show the last unclaimed total and mirror age.
func TestChannelSeries(t *testing.T) {
	m := New(nil)
	m.Channel("voucher", "charged", 0)
	m.Channel("voucher", "charged", 0)
	m.Channel("voucher", "corrective", 0)
	m.Channel("deposit", "mined", 60_000)
	m.Channel("refund", "pending", 0)
	m.Channel("claim", "mined", 91_234)
	m.Channel("claim", "failed", 21_000)
	m.Channel("sweep", "mined", 40_000)
	m.Channel("steal", "mined", 1)
	m.ChannelGauges(big.NewInt(123_456), 90*time.Second)
	m.ChannelGauges(big.NewInt(12_345), 42*time.Second)
	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sandboxd_channel_vouchers_total", map[string]string{"outcome": "charged"}, 2},
		{"sandboxd_channel_vouchers_total", map[string]string{"outcome": "corrective"}, 1},
		{"sandboxd_channel_vouchers_total", map[string]string{"outcome": "refused"}, 0},
		{"sandboxd_channel_vouchers_total", map[string]string{"outcome": "released"}, 0},
		{"sandboxd_channel_deposits_total", map[string]string{"outcome": "mined"}, 1},
		{"sandboxd_channel_deposits_total", map[string]string{"outcome": "unsent"}, 0},
		{"sandboxd_channel_refunds_total", map[string]string{"outcome": "pending"}, 1},
		{"sandboxd_channel_claims_total", map[string]string{"outcome": "mined"}, 1},
		{"sandboxd_channel_claims_total", map[string]string{"outcome": "failed"}, 1},
		{"sandboxd_channel_sweeps_total", map[string]string{"outcome": "mined"}, 1},
		{"sandboxd_channel_sweeps_total", map[string]string{"outcome": "failed"}, 0},
		{"sandboxd_channel_gas_used_total", map[string]string{"op": "claim"}, 112_234},
		{"sandboxd_channel_gas_used_total", map[string]string{"op": "deposit"}, 60_000},
		{"sandboxd_channel_gas_used_total", map[string]string{"op": "refund"}, 0},
		{"sandboxd_channel_unclaimed_atomic", nil, 12_345},
		{"sandboxd_channel_mirror_age_seconds", nil, 42},
	} {
		if v := value(fams, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if v := value(fams, "sandboxd_channel_gas_used_total", map[string]string{"op": "steal"}); v != -1 {
		t.Errorf("an unknown op was counted: %v", v)
	}
}
