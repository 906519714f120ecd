#!/usr/bin/env node
// batch.mjs pays sandboxd through an x402 batch-settlement channel with the official client
// (@x402/fetch's wrapFetchWithPayment with @x402/evm's batch-settlement client scheme only,
// reading the chain through a viem public client) and prints one JSON line:
//
//   node batch.mjs --rpc RPC --key-file F --steps JSON [--parallel N]
//
// --steps is a JSON array of calls made in order by one client (one channel storage), each
// {"url": URL, "method": "POST", "body": {...}} or {"refund": URL} (the client's own refund,
// GET on URL). A step answered 201 with a session_id keeps it under the step's "as" (default
// "session"), and later steps may use "${session}" (or "${NAME}") in their url. A step with
// "voucherOnly": true pays with a voucher even past the channel's balance (the client's
// deposit strategy declines to top up, as a payer who knows better would). With --parallel N
// the steps are sent N at a time instead. --gap pauses MS before each step (or group),
// outside its time. --scheme exact pays with the official exact client instead, for a
// comparison through the same script. For each step: status, body, the decoded
// PAYMENT-RESPONSE, on a 402 the decoded PAYMENT-REQUIRED, the payment header the client sent
// last (for replays), the answer's Server-Timing, the time in ms (the official client's two
// round trips: the 402, then the paid call) and each request's time to its headers.
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { chainFor, readKeyFile } from "./chain.mjs";
import { NETWORK, bodyOf } from "./payer.mjs";

function parseArgs(argv) {
  const out = { rpc: "", keyFile: "", steps: [], parallel: 1, gap: 0, scheme: "batch-settlement" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--rpc") out.rpc = argv[++i];
    else if (a === "--key-file") out.keyFile = argv[++i];
    else if (a === "--steps") out.steps = JSON.parse(argv[++i]);
    else if (a === "--parallel") out.parallel = Number(argv[++i]);
    else if (a === "--gap") out.gap = Number(argv[++i]);
    else if (a === "--scheme") out.scheme = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.rpc || !out.keyFile) throw new Error("--rpc and --key-file are required");
  if (out.scheme !== "batch-settlement" && out.scheme !== "exact") throw new Error(`unknown --scheme ${out.scheme}`);
  return out;
}

// recorder is fetch remembering the PAYMENT-SIGNATURE header of the last request it sent and
// each request's time to its headers (ms).
function recorder() {
  const r = { header: "", ms: [] };
  r.fetch = async (input, init) => {
    const req = new Request(input, init);
    r.header = req.headers.get("PAYMENT-SIGNATURE") || r.header;
    const t = performance.now();
    const res = await fetch(req);
    r.ms.push(performance.now() - t);
    return res;
  };
  return r;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pub = createPublicClient({ chain: chainFor(args.rpc), transport: http(args.rpc) });
  const account = privateKeyToAccount(readKeyFile(args.keyFile));
  const signer = toClientEvmSigner(account, pub);
  // Every step's scheme shares one channel storage: one client, whatever the step asks.
  const storage = new InMemoryClientChannelStorage();
  const scheme = new BatchSettlementEvmScheme(signer, { storage });
  const voucherOnly = new BatchSettlementEvmScheme(signer, { storage, depositStrategy: () => false });
  const exact = new ExactEvmScheme(account);
  const sessions = {};
  const run = async (step) => {
    const started = performance.now();
    const sent = recorder();
    const paying = args.scheme === "exact" ? exact : step.voucherOnly ? voucherOnly : scheme;
    const pay = wrapFetchWithPayment(sent.fetch, new x402Client().register(NETWORK, paying));
    if (step.refund) {
      try {
        const r = await scheme.refund(step.refund);
        return { refund: true, ok: true, settlement: r, ms: performance.now() - started };
      } catch (err) {
        return { refund: true, ok: false, error: err.message, ms: performance.now() - started };
      }
    }
    const url = step.url.replace(/\$\{(\w+)\}/g, (_, name) => sessions[name] ?? "");
    const init = { method: step.method || "POST", headers: { "Content-Type": "application/json" }, signal: AbortSignal.timeout(60_000) };
    if (step.body) init.body = JSON.stringify(step.body);
    try {
      const res = await pay(url, init);
      const ms = performance.now() - started;
      const header = res.headers.get("PAYMENT-RESPONSE");
      const required = res.status === 402 && res.headers.get("PAYMENT-REQUIRED");
      const body = await bodyOf(res);
      if (res.status === 201 && body.session_id) sessions[step.as || "session"] = body.session_id;
      return {
        status: res.status,
        body,
        settlement: header ? decodePaymentResponseHeader(header) : null,
        required: required ? decodePaymentRequiredHeader(required) : null,
        sent: sent.header,
        timing: res.headers.get("Server-Timing") || "",
        ms,
        requestMs: sent.ms,
      };
    } catch (err) {
      return { status: 0, error: err.message, ms: performance.now() - started };
    }
  };
  const results = [];
  for (let i = 0; i < args.steps.length; i += args.parallel) {
    if (args.gap > 0) await new Promise((resolve) => setTimeout(resolve, args.gap));
    results.push(...(await Promise.all(args.steps.slice(i, i + args.parallel).map(run))));
  }
  // Written in full before the process exits: a pipe takes a long line in parts.
  const line = JSON.stringify({ ok: true, payer: account.address, results }) + "\n";
  await new Promise((resolve) => process.stdout.write(line, resolve));
}

setTimeout(() => {
  process.stderr.write("batch.mjs: timed out after 240s\n");
  process.exit(2);
}, 240_000).unref();
main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`batch.mjs: ${err.stack || err.message}\n`);
    process.exit(1);
  },
);
