#!/usr/bin/env node
// batch.mjs pays sandboxd through an x402 batch-settlement channel with the official client
// (@x402/fetch's wrapFetchWithPayment with @x402/evm's batch-settlement client scheme only,
// reading the chain through a viem public client) and prints one JSON line:
//
//   node batch.mjs --rpc RPC --key-file F --steps JSON [--parallel N] [--gap MS] [--scheme exact]
//
// --steps is a JSON array of calls made in order by one client (one channel storage), each
// {"url": URL, "method": "POST", "body": {...}} or {"refund": URL} (the client's own refund,
// GET on URL). A step answered 201 with a session_id keeps it under the step's "as" (default
// "session"), and later steps may use "${session}" (or "${NAME}") in their url. With
// --parallel N the steps are sent N at a time instead. --gap pauses MS before each step (or
// group), outside its time. --scheme exact pays with the official exact client instead, for
// a comparison through the same script. For each step: status, body, the decoded
// PAYMENT-RESPONSE, the answer's Server-Timing, the time in ms (the official client's two
// round trips: the 402, then the paid call) and each request's time to its headers.
import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
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

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pub = createPublicClient({ chain: chainFor(args.rpc), transport: http(args.rpc) });
  const account = privateKeyToAccount(readKeyFile(args.keyFile));
  const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, pub));
  const paying = args.scheme === "exact" ? new ExactEvmScheme(account) : scheme;
  const client = new x402Client().register(NETWORK, paying);
  const sessions = {};
  const run = async (step) => {
    const started = performance.now();
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
      const requestMs = [];
      const timed = async (input, init) => {
        const t = performance.now();
        const res = await fetch(input, init);
        requestMs.push(performance.now() - t);
        return res;
      };
      const res = await wrapFetchWithPayment(timed, client)(url, init);
      const ms = performance.now() - started;
      const header = res.headers.get("PAYMENT-RESPONSE");
      const body = await bodyOf(res);
      if (res.status === 201 && body.session_id) sessions[step.as || "session"] = body.session_id;
      const settlement = header ? decodePaymentResponseHeader(header) : null;
      return { status: res.status, body, settlement, timing: res.headers.get("Server-Timing") || "", ms, requestMs };
    } catch (err) {
      return { status: 0, error: err.message, ms: performance.now() - started };
    }
  };
  const results = [];
  for (let i = 0; i < args.steps.length; i += args.parallel) {
    if (args.gap > 0) await new Promise((resolve) => setTimeout(resolve, args.gap));
    results.push(...(await Promise.all(args.steps.slice(i, i + args.parallel).map(run))));
  }
  process.stdout.write(JSON.stringify({ ok: true, payer: account.address, results }) + "\n");
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
