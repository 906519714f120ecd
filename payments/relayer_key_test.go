package payments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelayerKeyFileModeStopsTheStart: the onchain settler does not start
// on a relayer key file others can read.
func TestRelayerKeyFileModeStopsTheStart(t *testing.T) {
	cfg := testConfig(t)
	cfg.Settlement, cfg.RPCURL = SettleOnchain, "http://127.0.0.1:1"
	cfg.RelayerKeyFile = filepath.Join(t.TempDir(), "relayer.key")
	if err := os.WriteFile(cfg.RelayerKeyFile, []byte("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := dialChain(t.Context(), cfg, testRequirements(t), nil)
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+cfg.RelayerKeyFile) || !strings.Contains(err.Error(), "payments.relayer_key_file") {
		t.Fatalf("dialChain = %v; want a refusal naming payments.relayer_key_file and chmod 600", err)
	}
}
