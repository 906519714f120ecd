package x402

import (
	"os"
	"testing"
)

// BenchmarkDecodeEchoedVoucher decodes the PAYMENT-SIGNATURE header of a
// voucher as the official client (@x402/fetch 2.27 with @x402/evm's
// batch-settlement client) sent it to sandboxd: 8.5 KB of base64, most of
// it the bazaar extension the client echoes back. Every voucher call pays
// for this decoding before any other check.
func BenchmarkDecodeEchoedVoucher(b *testing.B) {
	sig, err := os.ReadFile("testdata/echoed-voucher.b64")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := DecodePayment(string(sig), "")
		if err != nil || p.Scheme != SchemeBatchSettlement || len(p.Extensions) == 0 {
			b.Fatalf("decoded %+v, %v; want a batch-settlement payment with its extensions", p, err)
		}
	}
}
