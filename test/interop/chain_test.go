package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// usdc is the Base Sepolia USDC address, where the test token's code is placed.
const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"

// transferTopic is keccak256("Transfer(address,address,uint256)").
const transferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

// account is one of anvil's default accounts (mnemonic "test test ... junk"): public
// test keys that hold ETH on a fresh anvil chain and nowhere else of value.
type account struct{ key, address string }

var (
	relayer     = account{"0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}
	facilitator = account{"0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}
	payer       = account{"0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a", "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"}
	unfunded    = account{"0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba", "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"}
	payee       = account{"", "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955"}
)

// chain is a JSON-RPC endpoint of a local anvil chain.
type chain struct{ rpc string }

// call makes one JSON-RPC call and decodes its result into out.
func (c *chain) call(out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	res, err := httpClient.Post(c.rpc, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		r.Error.Method = method
		return r.Error
	}
	return json.Unmarshal(r.Result, out)
}

// rpcError is a JSON-RPC error answer; Data holds a revert's data (a custom error's selector
// and arguments) when the node gives it.
type rpcError struct {
	Method  string `json:"-"`
	Message string `json:"message"`
	Data    string `json:"data"`
}

func (e *rpcError) Error() string { return e.Method + ": " + e.Message }

// waitUp waits until the chain answers eth_chainId with 84532, or exited closes.
func (c *chain) waitUp(timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var id string
		if err := c.call(&id, "eth_chainId"); err == nil && id == "0x14a34" {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("anvil exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer within %s", timeout)
}

// setup places the token at the USDC address and mints to the given addresses, with
// test/interop/chain.mjs (the same code the demo uses); flags are passed on (--channels
// also places the batch-settlement escrow stand-in and its collector).
func (c *chain) setup(t testing.TB, mints map[string]int64, flags ...string) {
	t.Helper()
	args := append([]string{"setup", "--rpc", c.rpc}, flags...)
	for addr, amount := range mints {
		args = append(args, "--mint", fmt.Sprintf("%s=%d", addr, amount))
	}
	var out struct {
		OK   bool   `json:"ok"`
		Name string `json:"name"`
	}
	runNode(t, 60*time.Second, &out, "chain.mjs", args...)
	if !out.OK || out.Name != "USDC" {
		t.Fatalf("chain setup: %+v", out)
	}
}

// balance is addr's USDC balance in atomic units.
func (c *chain) balance(t testing.TB, addr string) int64 {
	t.Helper()
	data := "0x70a08231" + pad32(addr)
	var hex string
	if err := c.call(&hex, "eth_call", map[string]string{"to": usdc, "data": data}, "latest"); err != nil {
		t.Fatalf("balanceOf(%s): %v", addr, err)
	}
	return hexInt(t, hex).Int64()
}

// blockNumber is the number of the latest block.
func (c *chain) blockNumber(t testing.TB) int64 {
	t.Helper()
	var hex string
	if err := c.call(&hex, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	return hexInt(t, hex).Int64()
}

// transfer is one USDC Transfer event.
type transfer struct {
	From, To string
	Value    int64
	TxHash   string
}

// transfersTo lists the USDC transfers to addr in blocks after from.
func (c *chain) transfersTo(t testing.TB, addr string, from int64) []transfer {
	t.Helper()
	if c.blockNumber(t) <= from {
		return nil // anvil refuses a range that starts past its head
	}
	filter := map[string]any{
		"address":   usdc,
		"fromBlock": fmt.Sprintf("0x%x", from+1),
		"toBlock":   "latest",
		"topics":    []any{transferTopic, nil, "0x" + pad32(addr)},
	}
	var logs []struct {
		Topics []string `json:"topics"`
		Data   string   `json:"data"`
		TxHash string   `json:"transactionHash"`
	}
	if err := c.call(&logs, "eth_getLogs", filter); err != nil {
		t.Fatal(err)
	}
	out := make([]transfer, 0, len(logs))
	for _, l := range logs {
		out = append(out, transfer{
			From:   "0x" + l.Topics[1][26:],
			To:     "0x" + l.Topics[2][26:],
			Value:  hexInt(t, l.Data).Int64(),
			TxHash: l.TxHash,
		})
	}
	return out
}

// receiptStatus is the status of a mined transaction: "0x1" for success.
func (c *chain) receiptStatus(t testing.TB, hash string) string {
	t.Helper()
	var r *struct {
		Status string `json:"status"`
	}
	if err := c.call(&r, "eth_getTransactionReceipt", hash); err != nil {
		t.Fatal(err)
	}
	if r == nil {
		return "missing"
	}
	return r.Status
}

func pad32(addr string) string {
	return strings.Repeat("0", 24) + strings.ToLower(strings.TrimPrefix(addr, "0x"))
}

func hexInt(t testing.TB, hex string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(strings.TrimPrefix(hex, "0x"), 16)
	if !ok {
		if hex == "0x" {
			return new(big.Int)
		}
		t.Fatalf("not a hex number: %q", hex)
	}
	return n
}

// sendAs sends a transaction of data to `to` from `from`, an account anvil impersonates, and
// returns its hash: mined when this returns, unless a test turned automining off (inOneBlock).
// Its gas limit is fixed: an estimate runs against the latest block, not after the
// transactions queued before it.
func (c *chain) sendAs(t testing.TB, from, to, data string) string {
	t.Helper()
	var ignored any
	if err := c.call(&ignored, "anvil_impersonateAccount", from); err != nil {
		t.Fatalf("impersonate %s: %v", from, err)
	}
	var tx string
	if err := c.call(&tx, "eth_sendTransaction", map[string]string{"from": from, "to": to, "data": data, "gas": "0x100000"}); err != nil {
		t.Fatalf("a transaction from %s to %s: %v", from, to, err)
	}
	return tx
}

// inOneBlock mines the transactions send sends in one block, so that nobody reading the
// chain sees the state between them.
func (c *chain) inOneBlock(t testing.TB, send func()) {
	t.Helper()
	var ignored any
	if err := c.call(&ignored, "evm_setAutomine", false); err != nil {
		t.Fatal(err)
	}
	send()
	for _, m := range []struct {
		method string
		params []any
	}{{"evm_mine", nil}, {"evm_setAutomine", []any{true}}} {
		if err := c.call(&ignored, m.method, m.params...); err != nil {
			t.Fatalf("%s: %v", m.method, err)
		}
	}
}

// increaseTime moves the chain's clock on by d and mines a block at the new time.
func (c *chain) increaseTime(t testing.TB, d time.Duration) {
	t.Helper()
	var ignored any
	if err := c.call(&ignored, "evm_increaseTime", int64(d/time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.call(&ignored, "evm_mine"); err != nil {
		t.Fatal(err)
	}
}
