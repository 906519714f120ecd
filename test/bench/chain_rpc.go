package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// call makes one JSON-RPC call and decodes its result into out.
func (a *anvil) call(out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	res, err := a.client.Post(a.rpc, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %s", method, r.Error.Message)
	}
	return json.Unmarshal(r.Result, out)
}

// chainTx is a mined transaction as the bench reads it.
type chainTx struct {
	Hash  string `json:"hash"`
	From  string `json:"from"`
	To    string `json:"to"`
	Input string `json:"input"`
	Block string `json:"blockNumber"`
}

// sentBy lists the transactions from addr mined in the blocks after
// block, in order.
func (a *anvil) sentBy(addr string, block int64) ([]chainTx, error) {
	head, err := a.blockNumber()
	if err != nil {
		return nil, err
	}
	var out []chainTx
	for n := block + 1; n <= head; n++ {
		var b struct {
			Transactions []chainTx `json:"transactions"`
		}
		if err := a.call(&b, "eth_getBlockByNumber", fmt.Sprintf("0x%x", n), true); err != nil {
			return nil, err
		}
		for _, tx := range b.Transactions {
			if strings.EqualFold(tx.From, addr) {
				out = append(out, tx)
			}
		}
	}
	return out, nil
}

// blockNumber is the number of the latest block.
func (a *anvil) blockNumber() (int64, error) {
	var hex string
	if err := a.call(&hex, "eth_blockNumber"); err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimPrefix(hex, "0x"), 16, 64)
}

// receipt is what the bench reads of a transaction's receipt.
type receipt struct {
	GasUsed uint64
	OK      bool
	logs    []chainLog
}

// chainLog is one log of a receipt: its topics and its data, in hex.
type chainLog struct {
	Topics []string `json:"topics"`
	Data   string   `json:"data"`
}

// find returns the receipt's first log of the event topic with first as
// its first indexed argument (any when first is "").
func (r receipt) find(topic, first string) (chainLog, bool) {
	for _, l := range r.logs {
		t := l.Topics
		if len(t) > 0 && strings.EqualFold(t[0], topic) && (first == "" || len(t) > 1 && strings.EqualFold(t[1], first)) {
			return l, true
		}
	}
	return chainLog{}, false
}

// word is the i-th 32-byte word of the log's data as a number (0 when
// there is none or it does not fit in 64 bits).
func (l chainLog) word(i int) uint64 {
	hex := strings.TrimPrefix(l.Data, "0x")
	if len(hex) < 64*(i+1) {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimLeft(hex[64*i:64*(i+1)], "0"), 16, 64)
	return n
}

// receipt reads the receipt of the transaction hash.
func (a *anvil) receipt(hash string) (receipt, error) {
	var r *struct {
		Status  string     `json:"status"`
		GasUsed string     `json:"gasUsed"`
		Logs    []chainLog `json:"logs"`
	}
	if err := a.call(&r, "eth_getTransactionReceipt", hash); err != nil {
		return receipt{}, err
	}
	if r == nil {
		return receipt{}, fmt.Errorf("no receipt for %s", hash)
	}
	gas, err := strconv.ParseUint(strings.TrimPrefix(r.GasUsed, "0x"), 16, 64)
	if err != nil {
		return receipt{}, fmt.Errorf("receipt of %s: gasUsed %q", hash, r.GasUsed)
	}
	return receipt{GasUsed: gas, OK: r.Status == "0x1", logs: r.Logs}, nil
}
