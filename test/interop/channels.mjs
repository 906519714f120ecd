#!/usr/bin/env node
// channels.mjs proves the batch-settlement escrow stand-in (payments/testdata/BatchSettlement.sol,
// placed by `chain.mjs setup --channels`) against the official x402 code, all in this process:
// the official seller (@x402/core's x402HTTPResourceServer with @x402/evm's batch-settlement
// server scheme) behind a plain node HTTP server, the official facilitator (facilitator.mjs's
// buildFacilitator with the batch-settlement scheme and a receiver authorizer key), and the
// official client (@x402/fetch with the batch-settlement client scheme) paying it:
//
//   node channels.mjs --rpc URL --payer-key-file F --facilitator-key-file F
//                     --authorizer-key-file F --receiver ADDR [--vouchers N]
//
// Steps: a deposit call and N-1 voucher calls, the seller's claim (claimWithSignature signed
// by the facilitator's authorizer) and sweep (settle), two more voucher calls, the client's
// refund (a claim and refundWithSignature in one multicall), a second sweep. After each it
// reads the chain. It prints one JSON line: the steps, the escrow's hashes and digests beside
// the official code's, and every warning or error the official code logged.
import { createServer } from "node:http";
import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as ClientScheme, computeChannelId } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as ServerScheme } from "@x402/evm/batch-settlement/server";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, getAddress, hashTypedData, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { CHAIN_ID, ESCROW, USDC, chainFor, escrow, readKeyFile, token } from "./chain.mjs";
import { buildFacilitator } from "./facilitator.mjs";
import { NETWORK } from "./payer.mjs";

const PRICE = "$0.001"; // 1000 atomic units
const ZERO_SALT = `0x${"00".repeat(32)}`;

function parseArgs(argv) {
  const out = { rpc: "", payerKeyFile: "", facilitatorKeyFile: "", authorizerKeyFile: "", receiver: "", vouchers: 5 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--rpc") out.rpc = argv[++i];
    else if (a === "--payer-key-file") out.payerKeyFile = argv[++i];
    else if (a === "--facilitator-key-file") out.facilitatorKeyFile = argv[++i];
    else if (a === "--authorizer-key-file") out.authorizerKeyFile = argv[++i];
    else if (a === "--receiver") out.receiver = argv[++i];
    else if (a === "--vouchers") out.vouchers = Number(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  for (const k of ["rpc", "payerKeyFile", "facilitatorKeyFile", "authorizerKeyFile", "receiver"]) {
    if (!out[k]) throw new Error(`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is required`);
  }
  return out;
}

// captureLogs records what the official code warns or errors about, still passing it to stderr.
function captureLogs() {
  const logged = [];
  for (const level of ["warn", "error"]) {
    const original = console[level];
    console[level] = (...args) => {
      logged.push(`${level}: ${args.map(String).join(" ")}`);
      original(...args);
    };
  }
  return logged;
}

// localFacilitator adapts the in-process facilitator to the client interface the resource
// server and the channel manager call (HTTPFacilitatorClient's methods).
function localFacilitator(facilitator) {
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    getSupported: async () => facilitator.getSupported(),
  };
}

// serveSeller serves GET /paid through the official HTTP resource server; it resolves to the URL.
async function serveSeller(resourceServer) {
  const routes = {
    "GET /paid": {
      accepts: { scheme: "batch-settlement", network: NETWORK, payTo: resourceServer.receiver, price: PRICE },
      description: "a paid resource for the channel proof",
      mimeType: "application/json",
    },
  };
  const seller = new x402HTTPResourceServer(resourceServer.server, routes);
  await seller.initialize();
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, `http://${req.headers.host}`);
      const adapter = {
        getHeader: (name) => req.headers[name.toLowerCase()],
        getMethod: () => req.method,
        getPath: () => url.pathname,
        getUrl: () => url.href,
        getAcceptHeader: () => req.headers.accept || "",
        getUserAgent: () => req.headers["user-agent"] || "",
        getQueryParams: () => Object.fromEntries(url.searchParams),
        getQueryParam: (name) => url.searchParams.get(name) ?? undefined,
      };
      const context = { adapter, path: url.pathname, method: req.method };
      const result = await seller.processHTTPRequest(context);
      if (result.type === "payment-error") return write(res, result.response);
      if (result.type !== "payment-verified") return write(res, { status: 200, headers: {}, body: { free: true } });
      const settled = await seller.processSettlement(
        result.paymentPayload, result.paymentRequirements, result.declaredExtensions,
        { request: context }, undefined, result.beforeHandlerSettlement,
      );
      if (!settled.success) return write(res, settled.response);
      return write(res, { status: 200, headers: settled.headers, body: { paid: true } });
    } catch (err) {
      console.error(`channels.mjs seller: ${err.stack || err.message}`);
      write(res, { status: 500, headers: {}, body: { error: err.message } });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}/paid` };
}

function write(res, { status, headers, body }) {
  const text = typeof body === "string" ? body : JSON.stringify(body ?? {});
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(text);
}

// chainState reads what the steps change: the channel, the receiver's totals, the refund
// nonce, the pending withdrawal and the token balances of payer, receiver and escrow.
async function chainState(pub, channelId, payer, receiver) {
  const read = (functionName, args) => pub.readContract({ address: ESCROW, abi: escrow.abi, functionName, args });
  const bal = (addr) => pub.readContract({ address: USDC, abi: token.abi, functionName: "balanceOf", args: [addr] });
  const [balance, totalClaimed] = await read("channels", [channelId]);
  const [rClaimed, rSettled] = await read("receivers", [receiver, USDC]);
  const [wAmount, wAt] = await read("pendingWithdrawals", [channelId]);
  return {
    channel: { balance: String(balance), totalClaimed: String(totalClaimed) },
    receiverTotals: { totalClaimed: String(rClaimed), totalSettled: String(rSettled) },
    refundNonce: String(await read("refundNonce", [channelId])),
    withdrawal: { amount: String(wAmount), initiatedAt: Number(wAt) },
    tokens: { payer: String(await bal(payer)), receiver: String(await bal(receiver)), escrow: String(await bal(ESCROW)) },
  };
}

// hashes reads the escrow's constants and digests and computes the same with viem and the
// official code, for the Go test to hold against the spec's values.
async function hashes(pub, config, channelId) {
  const read = (functionName, args = []) => pub.readContract({ address: ESCROW, abi: escrow.abi, functionName, args });
  const domain = { name: "x402 Batch Settlement", version: "1", chainId: CHAIN_ID, verifyingContract: getAddress(ESCROW) };
  const onchain = {};
  for (const name of ["CHANNEL_CONFIG_TYPEHASH", "VOUCHER_TYPEHASH", "REFUND_TYPEHASH", "CLAIM_ENTRY_TYPEHASH", "CLAIM_BATCH_TYPEHASH", "DOMAIN_SEPARATOR"]) {
    onchain[name] = await read(name);
  }
  onchain.RECEIVE_WITH_AUTHORIZATION_TYPEHASH = await pub.readContract({
    address: USDC, abi: token.abi, functionName: "RECEIVE_WITH_AUTHORIZATION_TYPEHASH",
  });
  onchain.getChannelId = await read("getChannelId", [config]);
  onchain.getVoucherDigest = await read("getVoucherDigest", [channelId, 1234n]);
  onchain.getRefundDigest = await read("getRefundDigest", [channelId, 7n, 1234n]);
  const viem = {
    channelId: computeChannelId(config, NETWORK),
    voucherDigest: hashTypedData({
      domain, primaryType: "Voucher", message: { channelId, maxClaimableAmount: 1234n },
      types: { Voucher: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }] },
    }),
    refundDigest: hashTypedData({
      domain, primaryType: "Refund", message: { channelId, nonce: 7n, amount: 1234n },
      types: { Refund: [{ name: "channelId", type: "bytes32" }, { name: "nonce", type: "uint256" }, { name: "amount", type: "uint128" }] },
    }),
  };
  return { onchain, viem };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const logged = captureLogs();
  const chain = chainFor(args.rpc);
  const pub = createPublicClient({ chain, transport: http(args.rpc) });
  const receiver = getAddress(args.receiver);

  const { facilitator } = buildFacilitator(args.rpc, readKeyFile(args.facilitatorKeyFile), {
    channels: true, authorizerKey: readKeyFile(args.authorizerKeyFile),
  });
  const facilitatorClient = localFacilitator(facilitator);
  const sellerScheme = new ServerScheme(receiver, { withdrawDelay: 900 });
  const resourceServer = new x402ResourceServer(facilitatorClient).register(NETWORK, sellerScheme);
  const { server, url } = await serveSeller({ server: resourceServer, receiver });
  const manager = sellerScheme.createChannelManager(facilitatorClient, NETWORK, USDC);

  const payerAccount = privateKeyToAccount(readKeyFile(args.payerKeyFile));
  const payerScheme = new ClientScheme(toClientEvmSigner(payerAccount, pub));
  const pay = wrapFetchWithPayment(fetch, new x402Client().register(NETWORK, payerScheme));
  const authorizer = privateKeyToAccount(readKeyFile(args.authorizerKeyFile)).address;
  const config = {
    payer: payerAccount.address, payerAuthorizer: payerAccount.address, receiver, receiverAuthorizer: authorizer,
    token: getAddress(USDC), withdrawDelay: 900, salt: ZERO_SALT,
  };
  const channelId = computeChannelId(config, NETWORK);
  const steps = [];
  const record = async (name, tx, extra = {}) => {
    const sent = tx ? { gasUsed: "", to: "", selector: "" } : {};
    if (tx) {
      const [receipt, sentTx] = await Promise.all([pub.getTransactionReceipt({ hash: tx }), pub.getTransaction({ hash: tx })]);
      if (receipt.status !== "success") throw new Error(`${name}: transaction ${tx} reverted`);
      Object.assign(sent, { gasUsed: String(receipt.gasUsed), to: sentTx.to, selector: sentTx.input.slice(0, 10) });
    }
    steps.push({ name, tx: tx || "", ...sent, ...extra, state: await chainState(pub, channelId, payerAccount.address, receiver) });
  };
  const call = async (name) => {
    const res = await pay(url, { method: "GET", signal: AbortSignal.timeout(30_000) });
    const header = res.headers.get("PAYMENT-RESPONSE");
    if (res.status !== 200 || !header) throw new Error(`${name}: status ${res.status}, body ${await res.text()}`);
    const settle = decodePaymentResponseHeader(header);
    if (!settle.success) throw new Error(`${name}: settlement failed: ${JSON.stringify(settle)}`);
    await record(name, settle.transaction, { amount: settle.amount ?? "", extra: settle.extra ?? {} });
  };

  try {
    for (let i = 1; i <= args.vouchers; i++) await call(i === 1 ? "deposit" : `voucher${i}`);
    const claims = await manager.claim();
    if (claims.length !== 1) throw new Error(`claim: ${claims.length} batches, want 1`);
    await record("claim", claims[0].transaction, { vouchers: claims[0].vouchers });
    await record("settle", (await manager.settle()).transaction);
    for (let i = 1; i <= 2; i++) await call(`voucherAfterClaim${i}`);
    const refunded = await payerScheme.refund(url);
    await record("refund", refunded.transaction, { amount: refunded.amount ?? "", extra: refunded.extra ?? {} });
    await record("settleAfterRefund", (await manager.settle()).transaction);
    const out = {
      ok: true, url, channelId, config, authorizer, steps,
      hashes: await hashes(pub, config, channelId), logged,
    };
    process.stdout.write(JSON.stringify(out) + "\n");
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

// Nothing here may hang the test: every step is a few local RPC calls on an automining chain.
setTimeout(() => {
  process.stderr.write("channels.mjs: timed out after 90s\n");
  process.exit(2);
}, 90_000).unref();
main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`channels.mjs: ${err.stack || err.message}\n`);
    process.exit(1);
  },
);
