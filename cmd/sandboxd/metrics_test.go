package main

import (
	"strings"
	"testing"
)

// TestMetricsListenerRefusesEveryInterface (issue 17, item 4): whatever
// spelling gets past the configuration check ([::%lo] fails net.ParseIP,
// a host name may resolve to 0.0.0.0), the metrics listener that ends up
// bound to every interface is closed and the start refused; a loopback one
// is kept. Before, [::%lo]:9090 served /metrics on [::].
func TestMetricsListenerRefusesEveryInterface(t *testing.T) {
	for _, addr := range []string{"[::%lo]:0", "[::ffff:0.0.0.0]:0", "0.0.0.0:0"} {
		ln, err := listenPrivate(addr)
		if err == nil {
			ln.Close()
			t.Errorf("%s: listening on %s was accepted", addr, ln.Addr())
			continue
		}
		if !strings.Contains(err.Error(), "every interface") {
			t.Errorf("%s: %v does not say why", addr, err)
		}
	}
	ln, err := listenPrivate("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
