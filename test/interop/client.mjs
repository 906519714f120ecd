#!/usr/bin/env node
// client.mjs drives sandboxd with the official x402 client (@x402/fetch's
// wrapFetchWithPayment, @x402/evm's exact scheme, a viem account) and prints one JSON
// line per scenario on stdout for the Go interop test to assert on:
//
//   node client.mjs SCENARIO --url URL/v1/code [--key-file FILE] [--code SRC] [--body JSON] [--n N] [--free-url URL] [--also URL]...
//
// --body sends that JSON as the paid call's body instead of a program of --code (pay: {} opens
// a session at URL/v1/sessions).
//
// Scenarios:
//   terms       an unpaid call: the 402 and the terms the official client parses from it
//   pay         one paid call (v2, PAYMENT-SIGNATURE), with the header it sent, for replays
//   concurrent  one payment signed once and sent on --n requests at the same time, spread
//               over --url and every --also URL (replicas of one fleet) in turn; each copy
//               reports whether it was answered as a retry (Idempotent-Replayed)
//   v1          one paid call by a v1-only client (terms from the body, X-PAYMENT header)
//   latency     --n free calls (--free-url) and --n paid calls, each timed; medians in ms
//   sign        the v2 payment the official client makes from the 402's terms, not sent
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { wrapFetchWithPayment } from "@x402/fetch";
import { bodyOf, codeRequest, signPayment, termsOf, timedFetch, unpaidTerms, v2Client } from "./payer.mjs";
import { runScenario } from "./scenario.mjs";

function parseArgs(argv) {
  const out = { scenario: argv[0], url: "", keyFile: "", code: "print(6*7)", body: "", n: 10, freeUrl: "", also: [] };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--url") out.url = argv[++i];
    else if (a === "--key-file") out.keyFile = argv[++i];
    else if (a === "--code") out.code = argv[++i];
    else if (a === "--body") out.body = argv[++i];
    else if (a === "--n") out.n = Number(argv[++i]);
    else if (a === "--free-url") out.freeUrl = argv[++i];
    else if (a === "--also") out.also.push(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.url) throw new Error("--url is required");
  return out;
}

// recordingFetch wraps fetch and remembers the payment header of the last request sent.
// It also times each request (ms), so a paid call splits into the 402 and the paid retry.
function recordingFetch(transform) {
  const sent = { name: "", value: "" };
  const times = [];
  const f = async (input, init) => {
    const req = new Request(input, init);
    for (const name of ["PAYMENT-SIGNATURE", "X-PAYMENT"]) {
      const v = req.headers.get(name);
      if (v) Object.assign(sent, { name, value: v });
    }
    const started = performance.now();
    const res = await timedFetch(req);
    times.push(performance.now() - started);
    return transform ? transform(res) : res;
  };
  return { fetch: f, sent, times };
}

// settlement decodes PAYMENT-RESPONSE (or X-PAYMENT-RESPONSE) the way the official client does.
function settlement(httpClient, res) {
  try {
    return httpClient.getPaymentSettleResponse((n) => res.headers.get(n));
  } catch {
    return null;
  }
}

async function terms(args) {
  const res = await timedFetch(args.url, codeRequest(args.code));
  const body = await bodyOf(res);
  const httpClient = new x402HTTPClient(new x402Client());
  let parsed = null;
  let parseError = "";
  try {
    parsed = termsOf(res, body);
  } catch (err) {
    parseError = err.message;
  }
  // A v1-only client reads the body alone.
  let v1 = null;
  try {
    v1 = httpClient.getPaymentRequiredResponse(() => null, body);
  } catch {
    v1 = null;
  }
  return { status: res.status, hasPaymentRequired: res.headers.has("PAYMENT-REQUIRED"), parsed, parseError, v1 };
}

async function paidCall(args, client, transform) {
  const httpClient = new x402HTTPClient(client);
  const rec = recordingFetch(transform);
  const paidFetch = wrapFetchWithPayment(rec.fetch, httpClient);
  const started = performance.now();
  const res = await paidFetch(args.url, requestOf(args));
  const ms = performance.now() - started;
  return {
    status: res.status,
    body: await bodyOf(res),
    settlement: settlement(httpClient, res),
    sentHeader: rec.sent,
    ms,
    requestMs: rec.times,
  };
}

// requestOf is the request a paid call sends: --body as it is (opening a session sends {}),
// else a program of --code.
function requestOf(args) {
  if (!args.body) return codeRequest(args.code);
  return { method: "POST", headers: { "Content-Type": "application/json" }, body: args.body };
}

async function pay(args, account) {
  return paidCall(args, v2Client(account));
}

// v1 hides the v2 header from the client, as a server speaking only v1 would, so the
// official client pays from the v1 terms in the body with an X-PAYMENT header.
async function v1(args, account) {
  const client = new x402Client().registerV1("base-sepolia", new ExactEvmSchemeV1(account));
  const hideV2 = (res) => {
    if (res.status !== 402) return res;
    const headers = new Headers(res.headers);
    headers.delete("PAYMENT-REQUIRED");
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  };
  return paidCall(args, client, hideV2);
}

// signedPayment asks for the terms and has the official client sign a v2 payment for
// them, without sending it.
async function signedPayment(args, account) {
  return signPayment(account, await unpaidTerms(args.url, args.code));
}

async function concurrent(args, account) {
  const { httpClient, payload, headers } = await signedPayment(args, account);
  const urls = [args.url, ...args.also];
  const one = async (_, i) => {
    const req = codeRequest(args.code);
    const url = urls[i % urls.length];
    const res = await timedFetch(url, { ...req, headers: { ...req.headers, ...headers } });
    const body = await bodyOf(res);
    return { url, status: res.status, replayed: res.headers.get("Idempotent-Replayed") || "", settlement: settlement(httpClient, res),
      stdout: body?.stdout, error: body?.error };
  };
  const results = await Promise.all(Array.from({ length: args.n }, one));
  return { n: args.n, nonce: payload.payload.authorization.nonce, results };
}

// sign asks for the terms and prints the payment the official client signs for them,
// without sending it, so a test can build hostile variants of a real payment.
async function sign(args, account) {
  const { payload, headers } = await signedPayment(args, account);
  return { payment: payload, headers };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// latency alternates free and paid calls so drift in the host affects both alike.
async function latency(args, account) {
  if (!args.freeUrl) throw new Error("latency needs --free-url");
  const free = [];
  const paid = [];
  const quote = [];
  const retry = [];
  const client = v2Client(account);
  for (let i = 0; i < args.n; i++) {
    let t = performance.now();
    const res = await timedFetch(args.freeUrl, codeRequest(args.code));
    await res.text();
    if (res.status !== 200) throw new Error(`free call ${i}: status ${res.status}`);
    free.push(performance.now() - t);
    const r = await paidCall(args, client);
    if (r.status !== 200 || !r.settlement?.success) throw new Error(`paid call ${i}: status ${r.status}`);
    paid.push(r.ms);
    quote.push(r.requestMs[0]);
    retry.push(r.requestMs[r.requestMs.length - 1]);
  }
  const mf = median(free);
  const mp = median(paid);
  return {
    n: args.n, freeMedianMs: mf, paidMedianMs: mp, addedMedianMs: mp - mf,
    quoteMedianMs: median(quote), paidRetryMedianMs: median(retry),
  };
}

const scenarios = { terms, pay, v1, concurrent, latency, sign };

runScenario({ script: "client.mjs", scenarios, parseArgs, needsKey: (scenario) => scenario !== "terms", timeoutMs: 240_000 });
