#!/usr/bin/env node
// mcp.mjs drives sandboxd's MCP server with the official MCP TypeScript client
// (@modelcontextprotocol/sdk over Streamable HTTP), used the way an agent uses it: it
// lists the tools first (so the client checks every structuredContent against the
// tool's output schema), then calls run_python. It prints one JSON line on stdout for
// the Go interop test to assert on:
//
//   node mcp.mjs SCENARIO --url URL/mcp [--key-file FILE] [--http-url URL/v1/code] [--n N]
//                [--arguments FILE] [--other-key-file FILE] [--rpc URL] [--tool NAME]
//
// --arguments names a JSON file of run_python's arguments for call and pay (the data
// tests send an environment and files); without it they run a stdlib program with stdin.
// --tool names the run tool call calls (run_python when absent).
//
// Scenarios:
//   call     free mode: list the tools, call run_python (or --tool)
//   pay      paid mode: an unpaid call (the terms), then the same call paid with a
//            PaymentPayload built by the official @x402/evm client scheme in
//            _meta["x402/payment"], then the same payload once more; prints the payload
//            for a replay over HTTP
//   latency  --n plain HTTP calls (--http-url) and --n MCP tool calls, alternated; medians
//   session  --arguments names a plan {open, steps, tool?}: open_session with plan.open, the
//            run tool plan.tool (run_python when absent) with each step and the session_id,
//            close_session, then that tool in the closed session. With --key-file each tool call is paid as an agent pays: the unpaid
//            call's terms signed by the official x402 client, in _meta["x402/payment"] of
//            the retry. With --other-key-file another wallet then pays for a call in the
//            session (the first step again) before it is closed.
//   channel  paid through an x402 batch-settlement channel by the official client scheme
//            (reading the chain at --rpc), as an agent pays: --n run_python calls, each the
//            unpaid call's terms signed by the client (a deposit, then vouchers) in
//            _meta["x402/payment"] of the retry, its settle report handed back to the client;
//            then a voucher signed for --http-url's terms buys an answer over HTTP, and the
//            same voucher is sent once more over MCP (replayed); a last paid call (after).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { NETWORK, bodyOf, codeRequest, signPayment, timedFetch, unpaidTerms } from "./payer.mjs";
import { runScenario } from "./scenario.mjs";
import { readFileSync } from "node:fs";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { chainFor, readKeyFile } from "./chain.mjs";

const REQUEST_TIMEOUT_MS = 60_000;
const PROGRAM = { code: "import sys\nprint(sys.stdin.read().upper(), end='')\nprint(6*7)", stdin: "hi\n" };

function parseArgs(argv) {
  const out = {
    scenario: argv[0], url: "", keyFile: "", otherKeyFile: "", httpUrl: "", rpc: "", n: 50, arguments: PROGRAM, tool: "run_python",
  };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--url") out.url = argv[++i];
    else if (a === "--key-file") out.keyFile = argv[++i];
    else if (a === "--other-key-file") out.otherKeyFile = argv[++i];
    else if (a === "--http-url") out.httpUrl = argv[++i];
    else if (a === "--rpc") out.rpc = argv[++i];
    else if (a === "--tool") out.tool = argv[++i];
    else if (a === "--n") out.n = Number(argv[++i]);
    else if (a === "--arguments") out.arguments = JSON.parse(readFileSync(argv[++i], "utf8"));
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.url) throw new Error("--url is required");
  return out;
}

// connect connects a client and lists the tools, as an agent does before calling one.
async function connect(url) {
  const client = new Client({ name: "sandboxd-interop", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { tools } = await client.listTools();
  return { client, tools };
}

// call calls run_python with args; an exception (such as the client's own check of
// structuredContent against the output schema) is reported, not thrown.
async function call(client, meta, args = PROGRAM) {
  return callNamed(client, "run_python", args, meta);
}

// callNamed calls the tool name with args (and _meta when given), as call does.
async function callNamed(client, name, args, meta) {
  const params = { name, arguments: args };
  if (meta) params._meta = meta;
  try {
    return await client.callTool(params, undefined, { timeout: REQUEST_TIMEOUT_MS });
  } catch (err) {
    return { thrown: err.message };
  }
}

async function callScenario(args) {
  const { client, tools } = await connect(args.url);
  const result = await callNamed(client, args.tool, args.arguments);
  await client.close();
  return { tools, result };
}

async function pay(args, account) {
  const { client, tools } = await connect(args.url);
  const unpaid = await call(client, undefined, args.arguments);
  if (unpaid.thrown || !unpaid.isError) return { tools, unpaid };
  const { payload } = await signPayment(account, unpaid.structuredContent);
  const paid = await call(client, { "x402/payment": payload }, args.arguments);
  const replayed = await call(client, { "x402/payment": payload }, args.arguments);
  await client.close();
  return { tools, unpaid, payload, paid, replayed };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// SPACING_MS spaces the timed calls so the warm pool refills between them (the engine makes
// 6-7 containers a second): back to back, both kinds of call would time the engine.
const SPACING_MS = 400;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// latency alternates a plain HTTP call and an MCP tool call of the same program on one
// connected client (an agent keeps its connection), so drift in the host affects both.
async function latency(args) {
  if (!args.httpUrl) throw new Error("latency needs --http-url");
  const { client } = await connect(args.url);
  const http = [];
  const mcp = [];
  const body = JSON.stringify({ code: PROGRAM.code, stdin: PROGRAM.stdin });
  for (let i = 0; i < args.n; i++) {
    await sleep(SPACING_MS);
    let t = performance.now();
    const res = await fetch(args.httpUrl, { method: "POST", headers: { "Content-Type": "application/json" }, body });
    await res.text();
    if (res.status !== 200) throw new Error(`HTTP call ${i}: status ${res.status}`);
    http.push(performance.now() - t);
    await sleep(SPACING_MS);
    t = performance.now();
    const r = await call(client);
    if (r.thrown || r.isError) throw new Error(`MCP call ${i}: ${r.thrown || JSON.stringify(r.content)}`);
    mcp.push(performance.now() - t);
  }
  await client.close();
  const mh = median(http);
  const mm = median(mcp);
  return { n: args.n, httpMedianMs: mh, mcpMedianMs: mm, addedMedianMs: mm - mh };
}

// paidCall calls name with args; with an account and terms in the answer, it pays them
// with the official x402 client and calls again with the payment: {unpaid, result}.
async function paidCall(client, name, args, account) {
  const first = await callNamed(client, name, args);
  if (!account || first.thrown || !first.isError || !first.structuredContent?.x402Version) return { result: first };
  const { payload } = await signPayment(account, first.structuredContent);
  return { unpaid: first, result: await callNamed(client, name, args, { "x402/payment": payload }) };
}

async function session(args, account) {
  const plan = args.arguments;
  if (!plan.steps) throw new Error("session needs --arguments with a plan {open, steps}");
  const other = args.otherKeyFile ? privateKeyToAccount(readKeyFile(args.otherKeyFile)) : null;
  const tool = plan.tool ?? "run_python";
  const { client, tools } = await connect(args.url);
  const open = await paidCall(client, "open_session", plan.open ?? {}, account);
  const id = open.result.structuredContent?.session_id;
  if (!id || open.result.isError) return { tools, open };
  const steps = [];
  for (const step of plan.steps) steps.push(await paidCall(client, tool, { ...step, session_id: id }, account));
  const foreign = other ? await paidCall(client, tool, { ...plan.steps[0], session_id: id }, other) : undefined;
  const close = await callNamed(client, "close_session", { session_id: id });
  const after = await callNamed(client, tool, { code: "x", session_id: id });
  await client.close();
  return { tools, open, steps, foreign, close, after };
}

// channelCall calls run_python paid through the channel of payer (an x402Client with the
// batch-settlement scheme): the unpaid call's terms signed, the paid call, and its settle
// report (or corrective terms) handed back to the client, as its HTTP transport does.
async function channelCall(client, payer, args) {
  const unpaid = await call(client, undefined, args);
  if (unpaid.thrown || !unpaid.isError) return { result: unpaid };
  const payload = await payer.createPaymentPayload(unpaid.structuredContent);
  const result = await call(client, { "x402/payment": payload }, args);
  const settleResponse = result._meta?.["x402/payment-response"];
  const answer = settleResponse ? { settleResponse } : { paymentRequired: result.structuredContent };
  await payer.handlePaymentResponse({ paymentPayload: payload, requirements: payload.accepted, ...answer });
  return { kind: payload.payload.type, result };
}

async function channel(args, account) {
  if (!args.rpc || !args.httpUrl) throw new Error("channel needs --rpc and --http-url");
  const pub = createPublicClient({ chain: chainFor(args.rpc), transport: http(args.rpc) });
  const payer = new x402Client().register(NETWORK, new BatchSettlementEvmScheme(toClientEvmSigner(account, pub)));
  const { client, tools } = await connect(args.url);
  const calls = [];
  for (let i = 0; i < args.n; i++) calls.push(await channelCall(client, payer, args.arguments));
  // A voucher buys an answer over HTTP, then is sent again over MCP.
  const httpPayer = new x402HTTPClient(payer);
  const payload = await payer.createPaymentPayload(await unpaidTerms(args.httpUrl));
  const res = await timedFetch(args.httpUrl, {
    ...codeRequest("print(6*7)"),
    headers: { "Content-Type": "application/json", ...httpPayer.encodePaymentSignatureHeader(payload) },
  });
  const overHTTP = { status: res.status, body: await bodyOf(res) };
  overHTTP.settlement = (await httpPayer.processPaymentResult(payload, (n) => res.headers.get(n), res.status)).settleResponse;
  const replayed = await call(client, { "x402/payment": payload }, args.arguments);
  const after = await channelCall(client, payer, args.arguments);
  await client.close();
  return { tools, calls, overHTTP, replayed, after };
}

const scenarios = { call: callScenario, pay, latency, session, channel };
const keyed = new Set(["pay", "channel"]);

runScenario({ script: "mcp.mjs", scenarios, parseArgs, needsKey: (scenario) => keyed.has(scenario), timeoutMs: 280_000 });
