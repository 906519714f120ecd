package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"sandboxd"
)

// The channels' targets: a voucher call within voucherTarget of the free
// call (p50), and a channel's gas a call under gasRatioTarget of an exact
// transfer's.
const (
	voucherTarget  = 10 * time.Millisecond
	gasRatioTarget = 0.25
)

// channelsTable writes the channels phase against its targets.
func channelsTable(w io.Writer, o options, r channelsReport) {
	if len(r.rows[rowFree]) == 0 {
		return
	}
	fmt.Fprintf(w, "\nChannels, on anvil mining a block every %v: `%s` through the official x402 client "+
		"(@x402/fetch with @x402/evm's exact or batch-settlement client: test/interop/batch.mjs), %d calls a row, one at a "+
		"time, %v before each; a paid call is the client's whole exchange, two round trips (the 402, then the paid call). "+
		"A free service and a paid one (settling on chain with its relayer, offering exact and batch-settlement) side by "+
		"side; free and voucher calls in turns, one client; the exact calls before them, after one not counted. "+
		"Each call's p50s split it: the 402's round trip, the answer's (each to its headers), the client's own work "+
		"(the rest); and the answer's Server-Timing, all its phases and the payment's (payment + settle), then each "+
		"phase's p50 (reserve is where a deposit is collected and a voucher's increment held). Load at the end %s.\n\n",
		o.blockTime, channelProgram, o.channelCalls, o.gap, r.load)
	row := newTable(w)
	for _, name := range []string{rowFree, rowExact, rowDeposit, rowVoucher, rowFreeSession, rowVoucherSession} {
		figure := rowFigure(r.rows[name])
		if name == rowExact {
			figure += fmt.Sprintf("; gasUsed a transfer %s (%s to %s)", kilo(uint64(meanGas(r.exactGas))),
				kilo(minMax(r.exactGas, false)), kilo(minMax(r.exactGas, true)))
		}
		if name == rowDeposit {
			figure += fmt.Sprintf("; gasUsed %s", kilo(r.depositGas))
		}
		row(name, figure, "", true)
		switch name {
		case rowVoucher:
			deltaRow(row, "voucher − free, one-shot", r.rows[rowVoucher], r.rows[rowFree])
		case rowVoucherSession:
			deltaRow(row, "voucher − free, session call", r.rows[rowVoucherSession], r.rows[rowFreeSession])
		}
	}
	exact := meanGas(r.exactGas)
	ratio := r.gas.perCall() / max(exact, 1)
	row(fmt.Sprintf("gas a call: %d voucher calls on one channel, its claims and sweeps", r.gas.calls),
		fmt.Sprintf("(deposit %s + claims %s + sweeps %s) ÷ %d = %s against exact's %s a transfer: %.3f×",
			kilo(r.gas.deposit), kilos(r.gas.claims), kilos(r.gas.sweeps), r.gas.calls, kilo(uint64(r.gas.perCall())),
			kilo(uint64(exact)), ratio),
		fmt.Sprintf("< %.2f×", gasRatioTarget), r.gas.total() > 0 && ratio < gasRatioTarget)
	fmt.Fprintln(w)
}

// rowFigure is a row's p50 and p95 at the caller and, at their medians,
// where the time went: the 402's round trip, the answer's, the client's
// own work (the rest), and the server's phases in all and the payment's.
func rowFigure(rs []payResult) string {
	t := timingsOf(rs)
	split := fmt.Sprintf("answer %.1f ms, client %.1f ms", ms(t.answer.pct(50)), ms(t.own.pct(50)))
	if len(t.quote) > 0 {
		split = fmt.Sprintf("402 %.1f ms, ", ms(t.quote.pct(50))) + split
	}
	if len(t.server) > 0 {
		split += fmt.Sprintf("; server %.1f ms, its payment %.1f ms (%s)", ms(t.server.pct(50)), ms(t.pay.pct(50)),
			phaseMedians(t.phases))
	}
	if len(rs) == 1 {
		return fmt.Sprintf("%.1f ms (%s)", ms(t.wall[0]), split)
	}
	return fmt.Sprintf("p50 %.1f ms, p95 %.1f ms (%d calls); p50s: %s", ms(t.wall.pct(50)), ms(t.wall.pct(95)), len(rs), split)
}

// deltaRow writes a paid row's p50 and p95 less a free row's, against
// voucherTarget.
func deltaRow(row func(what, figure, target string, ok bool), what string, paid, free []payResult) {
	pw, fw := timingsOf(paid).wall, timingsOf(free).wall
	d50, d95 := pw.pct(50)-fw.pct(50), pw.pct(95)-fw.pct(95)
	row(what, fmt.Sprintf("p50 %+.1f ms, p95 %+.1f ms", ms(d50), ms(d95)),
		fmt.Sprintf("p50 ≤ %.0f ms", ms(voucherTarget)), len(pw) > 0 && len(fw) > 0 && d50 <= voucherTarget)
}

// callTimings are a row's calls split: the wall time at the caller; the
// 402's round trip (paid calls only) and the answer's; the client's own
// work (the wall time less its requests); and, for answers that carry
// Server-Timing, the server's phases in all and the payment's (payment
// and settle).
type callTimings struct {
	wall, quote, answer, own, server, pay latencies
	// phases are each Server-Timing phase's durations, by name.
	phases map[string]latencies
}

// phaseMedians lists each phase's p50 in the order sandboxd records them
// ("read 0.1, payment 2.0, ..."), for a reader who wants to know where a
// row's server time went.
func phaseMedians(phases map[string]latencies) string {
	var parts []string
	for _, ph := range []sandboxd.Phase{sandboxd.PhaseRead, sandboxd.PhasePayment, sandboxd.PhaseReplay,
		sandboxd.PhaseAdmit, sandboxd.PhaseReserve, sandboxd.PhaseTake, sandboxd.PhaseTakeWait, sandboxd.PhaseStart,
		sandboxd.PhaseHandover, sandboxd.PhaseProgram, sandboxd.PhaseDemux, sandboxd.PhaseSettle} {
		if l := phases[string(ph)]; len(l) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", ph, ms(l.pct(50))))
		}
	}
	return strings.Join(parts, ", ")
}

// timingsOf splits each of rs.
func timingsOf(rs []payResult) callTimings {
	t := callTimings{phases: map[string]latencies{}}
	for _, r := range rs {
		t.wall = append(t.wall, r.wall())
		var requests time.Duration
		for i, v := range r.RequestMS {
			d := time.Duration(v * float64(time.Millisecond))
			requests += d
			if i == len(r.RequestMS)-1 {
				t.answer = append(t.answer, d)
			} else if i == 0 {
				t.quote = append(t.quote, d)
			}
		}
		t.own = append(t.own, r.wall()-requests)
		if phases := parseServerTiming(r.Timing); phases != nil {
			var all time.Duration
			for name, d := range phases {
				all += d
				t.phases[name] = append(t.phases[name], d)
			}
			t.server, t.pay = append(t.server, all), append(t.pay, phases["payment"]+phases["settle"])
		}
	}
	return t
}

// kilos lists gas in thousands, "a + b" when there is more than one.
func kilos(gas []uint64) string {
	parts := make([]string, len(gas))
	for i, g := range gas {
		parts[i] = kilo(g)
	}
	if len(parts) > 1 {
		return "(" + strings.Join(parts, " + ") + ")"
	}
	return strings.Join(parts, "")
}

// meanGas is the mean of gas.
func meanGas(gas []uint64) float64 {
	var t uint64
	for _, g := range gas {
		t += g
	}
	return float64(t) / float64(max(len(gas), 1))
}

// minMax is gas's least, or greatest when most.
func minMax(gas []uint64, most bool) uint64 {
	var m uint64
	for i, g := range gas {
		if i == 0 || (most && g > m) || (!most && g < m) {
			m = g
		}
	}
	return m
}
