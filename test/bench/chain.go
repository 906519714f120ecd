package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// anvil is a local chain for the paid rows: anvil from the interop tests'
// npm packages, with Base Sepolia's chain id, mining a block every
// blockTime as Base does, so that a payment settled on chain waits for a
// block as it would there.
type anvil struct {
	cmd    *exec.Cmd
	rpc    string
	client *http.Client
}

// interopDir is test/interop: its node_modules hold anvil and the official
// x402 packages, and its scripts drive them.
func interopDir() string { return filepath.Join("test", "interop") }

// startAnvil starts anvil mining every blockTime on a free loopback port
// and waits until it answers with the chain id.
func startAnvil(ctx context.Context, blockTime time.Duration) (*anvil, error) {
	bin := filepath.Join(interopDir(), "node_modules", "@foundry-rs", "anvil-linux-"+goruntime.GOARCH, "bin", "anvil")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("anvil missing (make interop-deps): %w", err)
	}
	var last error
	// A port taken between freeLoopback and anvil's bind makes anvil exit: try another.
	for range 3 {
		addr, err := freeLoopback()
		if err != nil {
			return nil, err
		}
		host, port, _ := strings.Cut(addr, ":")
		a := &anvil{rpc: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}}
		a.cmd = exec.CommandContext(ctx, bin, "--chain-id", "84532", "--host", host, "--port", port, "--silent",
			"--block-time", strconv.FormatFloat(blockTime.Seconds(), 'f', -1, 64))
		a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := a.cmd.Start(); err != nil {
			return nil, err
		}
		if last = a.waitUp(10 * time.Second); last == nil {
			return a, nil
		}
		a.stop()
	}
	return nil, fmt.Errorf("anvil did not answer: %w", last)
}

// waitUp polls eth_chainId until it is Base Sepolia's.
func (a *anvil) waitUp(within time.Duration) error {
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var id string
		if err = a.call(&id, "eth_chainId"); err == nil && id == "0x14a34" {
			return nil
		}
	}
	return err
}

// stop ends anvil.
func (a *anvil) stop() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// setup places the test token at the USDC address, Multicall3, the
// batch-settlement escrow stand-in and its deposit collector, and mints
// each address its atomic units, with the interop tests' chain.mjs.
func (a *anvil) setup(ctx context.Context, mints map[string]int64) error {
	args := []string{"setup", "--rpc", a.rpc, "--channels"}
	for addr, n := range mints {
		args = append(args, "--mint", fmt.Sprintf("%s=%d", addr, n))
	}
	var out struct {
		OK bool `json:"ok"`
	}
	if err := runNode(ctx, time.Minute, &out, "chain.mjs", args...); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("chain.mjs setup did not say ok")
	}
	return nil
}
