package metrics

import (
	"math/big"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
)

// channelSeries are the batch-settlement channels' series: a counter of
// outcomes per op, the gas of their receipts, and the background's gauges.
type channelSeries struct {
	outcomes  map[string]*prometheus.CounterVec
	gas       *prometheus.CounterVec
	unclaimed prometheus.Gauge
	mirrorAge prometheus.Gauge
}

// channelOps are the counters by op (channels.Observer's ops), with the
// outcomes each can end in, all shown from the start.
var channelOps = []struct {
	op, name, help string
	outcomes       []string
}{
	{channels.OpVoucher, "sandboxd_channel_vouchers_total",
		"Channel payments by outcome: charged, released (nothing charged), corrective (a corrective 402), " +
			"refused (any channel payment refused, refunds included; the reason is in sandboxd_payments_total).",
		[]string{channels.OutcomeCharged, channels.OutcomeReleased, channels.OutcomeCorrective, channels.OutcomeRefused}},
	{channels.OpDeposit, "sandboxd_channel_deposits_total",
		"Channel deposits collected by outcome: mined, failed (refused or reverted), pending (outcome unknown), unsent.",
		txOutcomes},
	{ledger.OpRefund, "sandboxd_channel_refunds_total",
		"Channel refunds by outcome: mined, failed (refused or reverted), pending (outcome unknown), unsent.",
		txOutcomes},
	{ledger.OpClaim, "sandboxd_channel_claims_total",
		"Claim transactions of charged vouchers by outcome: mined, failed.", []string{ledger.OpMined, ledger.OpFailed}},
	{ledger.OpSweep, "sandboxd_channel_sweeps_total",
		"Sweeps of claimed funds to pay_to by outcome: mined, failed.", []string{ledger.OpMined, ledger.OpFailed}},
}

// txOutcomes are the outcomes of a deposit or a refund.
var txOutcomes = []string{ledger.OpMined, ledger.OpFailed, ledger.OpPending, channels.OutcomeUnsent}

// registerChannels adds the channels' series.
func (m *Metrics) registerChannels() {
	s := channelSeries{outcomes: map[string]*prometheus.CounterVec{}}
	for _, c := range channelOps {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: c.name, Help: c.help}, []string{"outcome"})
		for _, o := range c.outcomes {
			v.WithLabelValues(o)
		}
		s.outcomes[c.op] = v
		m.reg.MustRegister(v)
	}
	s.gas = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_channel_gas_used_total",
		Help: "Gas of the channels' transaction receipts by op: deposit, claim, sweep, refund."}, []string{"op"})
	for _, op := range []string{channels.OpDeposit, ledger.OpClaim, ledger.OpSweep, ledger.OpRefund} {
		s.gas.WithLabelValues(op)
	}
	s.unclaimed = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sandboxd_channel_unclaimed_atomic",
		Help: "Charges not claimed yet on the fleet's channels, in the asset's atomic units (every replica reads the " +
			"same ledger: take the max, not the sum)."})
	s.mirrorAge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sandboxd_channel_mirror_age_seconds",
		Help: "How long ago the least recently mirrored open channel was read from the escrow."})
	m.reg.MustRegister(s.gas, s.unclaimed, s.mirrorAge)
	m.channels = s
}

// Channel counts how a channel op ended and the gas of its receipt: the
// channels' observer (payments.Config.ChannelObserver). An op it does not
// know is dropped.
func (m *Metrics) Channel(op, outcome string, gas uint64) {
	v, ok := m.channels.outcomes[op]
	if !ok {
		return
	}
	v.WithLabelValues(outcome).Inc()
	if gas > 0 {
		m.channels.gas.WithLabelValues(op).Add(float64(gas))
	}
}

// ChannelGauges shows the unclaimed total and the mirror's age
// (payments.Config.ChannelGauges).
func (m *Metrics) ChannelGauges(unclaimed *big.Int, mirrorAge time.Duration) {
	f, _ := new(big.Float).SetInt(unclaimed).Float64()
	m.channels.unclaimed.Set(f)
	m.channels.mirrorAge.Set(mirrorAge.Seconds())
}
