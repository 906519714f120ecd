#!/usr/bin/env node
// retry.mjs pays sandboxd with the official client (@x402/fetch's wrapFetchWithPayment,
// @x402/evm's exact or batch-settlement client scheme) carrying a payment id of the official
// payment-identifier extension (@x402/extensions' appendPaymentIdentifierToExtensions in an
// onBeforePaymentCreation hook), and retries a lost answer as an agent does: it resends the
// very PAYMENT-SIGNATURE header it sent (captured by an onAfterPaymentCreation hook, as the
// official client example of x402 PR #1332 does) with the same request. It prints one JSON line:
//
//   node retry.mjs --key-file F [--rpc RPC] [--scheme exact|batch-settlement] --steps JSON
//
// --steps is a JSON array of steps made in order (batch-settlement: one channel storage):
//   {"url", "body": {...}, "id", "keyFile", "retryUrl", "as"}  a paid POST of body to url with
//       payment id id (default: a new one); when its connection drops before an answer, the same
//       header and body go again to retryUrl (default url), up to three times. keyFile pays from
//       another wallet. A 201 with a session_id keeps it as "${as}" (default "session") for the
//       urls of later steps.
//   {"resendOf": i, "url", "body"}  step i's header sent once more, with url and body (default
//       step i's).
//   {"mcp": url, "arguments": {...}, "id"}  run_python over MCP (@modelcontextprotocol/sdk), paid
//       in _meta["x402/payment"] by the official client with payment id id; a call that throws
//       (its connection dropped) is made again with the same payload on a new connection.
// Each step reports: dropped (the first attempt's error), attempts, status, text (the body as
// sent), paymentResponse (the raw header), replayed (Idempotent-Replayed), settlement (decoded),
// the payment id and the header it sent. An MCP step reports structured (the structuredContent's
// JSON), meta and isError.
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { wrapFetchWithPayment } from "@x402/fetch";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { chainFor, readKeyFile } from "./chain.mjs";
import { NETWORK, REQUEST_TIMEOUT_MS } from "./payer.mjs";

const RETRIES = 3;

function parseArgs(argv) {
  const out = { rpc: "", keyFile: "", steps: [], scheme: "exact" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--rpc") out.rpc = argv[++i];
    else if (a === "--key-file") out.keyFile = argv[++i];
    else if (a === "--steps") out.steps = JSON.parse(argv[++i]);
    else if (a === "--scheme") out.scheme = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.keyFile) throw new Error("--key-file is required");
  if (out.scheme === "batch-settlement" && !out.rpc) throw new Error("batch-settlement needs --rpc");
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// payers makes one official client per wallet (key file), each keeping the payment id its
// next payment carries and the last payload it signed.
function payers(args) {
  const byKey = new Map();
  const storage = new InMemoryClientChannelStorage();
  return (keyFile) => {
    if (byKey.has(keyFile)) return byKey.get(keyFile);
    const account = privateKeyToAccount(readKeyFile(keyFile));
    let scheme = new ExactEvmScheme(account);
    if (args.scheme === "batch-settlement") {
      const pub = createPublicClient({ chain: chainFor(args.rpc), transport: http(args.rpc) });
      scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, pub), { storage });
    }
    const p = { id: "", payload: null };
    p.client = new x402Client().register(NETWORK, scheme);
    p.client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions) appendPaymentIdentifierToExtensions(paymentRequired.extensions, p.id);
    });
    p.client.onAfterPaymentCreation(async ({ paymentPayload }) => {
      p.payload = paymentPayload;
    });
    p.http = new x402HTTPClient(p.client);
    byKey.set(keyFile, p);
    return p;
  };
}

// post sends body to url with headers, within the request bound.
function post(f, url, body, headers = {}) {
  return f(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

// report is what a step prints of an answer.
async function report(res, payer) {
  const out = {
    status: res.status,
    text: await res.text(),
    paymentResponse: res.headers.get("PAYMENT-RESPONSE") || "",
    replayed: res.headers.get("Idempotent-Replayed") || "",
    retryAfter: res.headers.get("Retry-After") || "",
    settlement: null,
  };
  if (payer?.payload && out.paymentResponse) {
    // The settle report goes back to the client, as wrapFetchWithPayment does (a channel
    // client counts the charge from it).
    out.settlement = (await payer.http.processPaymentResult(payer.payload, (n) => res.headers.get(n), res.status)).settleResponse ?? null;
  }
  return out;
}

// sentID is the payment id a PAYMENT-SIGNATURE header carries.
function sentID(header) {
  if (!header) return "";
  const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
  return payload.extensions?.["payment-identifier"]?.info?.id ?? "";
}

// paidStep pays for step.body at step.url and retries a lost answer with the same header.
async function paidStep(step, payerOf, mainKey) {
  const payer = payerOf(step.keyFile || mainKey);
  payer.id = step.id || generatePaymentId();
  payer.payload = null;
  let header = "";
  const recording = async (input, init) => {
    const req = new Request(input, init);
    header = req.headers.get("PAYMENT-SIGNATURE") || header;
    return fetch(req);
  };
  const out = { attempts: 1, dropped: "" };
  let res;
  try {
    res = await post(wrapFetchWithPayment(recording, payer.http), step.url, step.body);
  } catch (err) {
    out.dropped = String(err.cause?.message || err.message);
    if (!header) throw new Error(`no payment was sent before the failure: ${out.dropped}`);
    for (; !res && out.attempts <= RETRIES; out.attempts++) {
      await sleep(200 * out.attempts);
      try {
        res = await post(fetch, step.retryUrl || step.url, step.body, { "PAYMENT-SIGNATURE": header });
      } catch (retryErr) {
        out.lastError = String(retryErr.cause?.message || retryErr.message);
      }
    }
    if (!res) throw new Error(`every retry failed: ${out.lastError}`);
  }
  Object.assign(out, await report(res, payer), { header, id: sentID(header) });
  return out;
}

// resendStep sends an earlier step's header again, with its own url and body if given.
async function resendStep(step, done) {
  const first = done[step.resendOf];
  const res = await post(fetch, step.url || first.url, step.body || first.body, { "PAYMENT-SIGNATURE": first.header });
  return { attempts: 1, dropped: "", ...(await report(res, null)), header: first.header, id: sentID(first.header) };
}

// mcpCall calls run_python on a new connection to url, with meta.
async function mcpCall(url, args, meta) {
  const client = new Client({ name: "sandboxd-retry", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await client.listTools();
    return await client.callTool({ name: "run_python", arguments: args, _meta: meta }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  } finally {
    await client.close().catch(() => {});
  }
}

// mcpStep pays for a run_python call over MCP and retries a lost answer with the same payload.
async function mcpStep(step, payerOf, mainKey) {
  const payer = payerOf(step.keyFile || mainKey);
  payer.id = step.id || generatePaymentId();
  const unpaid = await mcpCall(step.mcp, step.arguments);
  if (!unpaid.isError || !unpaid.structuredContent) throw new Error(`unpaid MCP call: ${JSON.stringify(unpaid)}`);
  const payload = await payer.client.createPaymentPayload(unpaid.structuredContent);
  const meta = { "x402/payment": payload };
  const out = { attempts: 1, dropped: "", id: payload.extensions?.["payment-identifier"]?.info?.id ?? "" };
  let result;
  try {
    result = await mcpCall(step.mcp, step.arguments, meta);
  } catch (err) {
    out.dropped = String(err.message);
    for (; !result && out.attempts <= RETRIES; out.attempts++) {
      await sleep(200 * out.attempts);
      try {
        result = await mcpCall(step.retryUrl || step.mcp, step.arguments, meta);
      } catch (retryErr) {
        out.lastError = String(retryErr.message);
      }
    }
    if (!result) throw new Error(`every MCP retry failed: ${out.lastError}`);
  }
  return { ...out, isError: !!result.isError, structured: JSON.stringify(result.structuredContent ?? null), meta: result._meta ?? null };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const payerOf = payers(args);
  const vars = {};
  const fill = (s) => s && s.replace(/\$\{(\w+)\}/g, (_, name) => vars[name] ?? "");
  const done = [];
  for (const raw of args.steps) {
    const step = { ...raw, url: fill(raw.url), retryUrl: fill(raw.retryUrl) };
    let out;
    if (step.mcp) out = await mcpStep(step, payerOf, args.keyFile);
    else if (step.resendOf !== undefined) out = await resendStep(step, done);
    else out = await paidStep(step, payerOf, args.keyFile);
    if (!step.mcp && out.status === 201) {
      try {
        vars[step.as || "session"] = JSON.parse(out.text).session_id;
      } catch {}
    }
    done.push({ ...out, url: step.url, body: step.body });
  }
  return done.map(({ url, body, ...rest }) => rest);
}

setTimeout(() => {
  process.stderr.write("retry.mjs: timed out after 240s\n");
  process.exit(2);
}, 240_000).unref();
main().then(
  (steps) => process.stdout.write(JSON.stringify({ ok: true, steps }) + "\n"),
  (err) => {
    process.stdout.write(JSON.stringify({ ok: false, error: err.message }) + "\n");
    process.exit(1);
  },
);
