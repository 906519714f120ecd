// vectors.mjs writes vectors.json: batch-settlement channel configs, ids, vouchers, deposits
// and refunds made by the official x402 client (@x402/evm 2.27.0's batch-settlement client,
// @x402/core's x402Client, viem), for the Go tests of package x402/channel to check without
// node. Keys are anvil's public test keys; nothing touches a network. Every signature the
// client made is recovered here first (with viem and the types @x402/evm exports), so a
// vector the client did not sign cannot be written; the wrongly typed signatures (wrongType)
// are viem's, by the same key, over the voucher's numbers under another type or domain.
//
// Regenerate (the packages are those of test/interop; the output is committed):
//
//   cd test/interop && node ../../x402/channel/testdata/vectors.mjs > ../../x402/channel/testdata/vectors.json
//
// The deposit's authorization salt and validBefore are random and time-based in the client,
// so each run writes other deposit vectors; the rest is deterministic.
import { createRequire } from "node:module";

// The packages are resolved from the working directory (test/interop), not from this file.
const require = createRequire(process.cwd() + "/");
const viem = require("viem");
const { privateKeyToAccount } = require("viem/accounts");
const evm = require("@x402/evm");
const client = require("@x402/evm/batch-settlement/client");
const { x402Client, x402HTTPClient } = require("@x402/core/client");
const { decodePaymentSignatureHeader } = require("@x402/core/http");

// anvil's default accounts 0..5 (public test keys).
const keys = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
].map((k) => privateKeyToAccount(k));

const USDC_SEPOLIA = { asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2" };
const USDC_BASE = { asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", name: "USD Coin", version: "2" };

// The ERC-3009 type the token verifies a deposit's authorization under: the fields of the
// exported TransferWithAuthorization, under the name ReceiveWithAuthorization.
const receiveTypes = { ReceiveWithAuthorization: evm.authorizationTypes.TransferWithAuthorization };

// The channels: each a payer, an optional voucher signer (payerAuthorizer), a salt and the
// terms entry the client is given.
const cases = [
  {
    name: "sepolia_default", network: "eip155:84532", token: USDC_SEPOLIA, payer: 1, authorizer: undefined,
    salt: undefined, payTo: keys[3].address, receiverAuthorizer: keys[4].address, withdrawDelay: 900,
    amount: "1000", minDeposit: "10000",
  },
  {
    name: "sepolia_delegated_signer", network: "eip155:84532", token: USDC_SEPOLIA, payer: 1, authorizer: 2,
    salt: "0x" + "11".repeat(31) + "02", payTo: keys[3].address.toLowerCase(), receiverAuthorizer: keys[4].address,
    withdrawDelay: 3600, amount: "5000", minDeposit: "50000",
  },
  {
    name: "base_max_delay", network: "eip155:8453", token: USDC_BASE, payer: 5, authorizer: undefined,
    salt: "0x" + "ab".repeat(32), payTo: keys[0].address, receiverAuthorizer: keys[3].address,
    withdrawDelay: 2592000, amount: "7", minDeposit: "70",
  },
];

function escrowDomain(chainId) {
  return { ...evm.BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: viem.getAddress(evm.BATCH_SETTLEMENT_ADDRESS) };
}

function terms(c) {
  const accepts = {
    scheme: "batch-settlement", network: c.network, amount: c.amount, asset: c.token.asset, payTo: c.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: c.token.name, version: c.token.version, receiverAuthorizer: c.receiverAuthorizer,
      withdrawDelay: c.withdrawDelay, minDeposit: c.minDeposit },
  };
  const required = {
    x402Version: 2, error: "payment required",
    resource: { url: "https://sandboxd.test/v1/code", description: "Run a short Python program", mimeType: "application/json" },
    accepts: [accepts], extensions: {},
  };
  return { accepts, required };
}

// recovered throws unless signature over the typed data recovers to want.
async function recovered(typed, signature, want) {
  const got = await viem.recoverTypedDataAddress({ ...typed, signature });
  if (got.toLowerCase() !== want.toLowerCase()) throw new Error(`${typed.primaryType}: recovered ${got}, want ${want}`);
  return got;
}

// pay has the official x402Client pay the terms with scheme and returns the payment header
// and its JSON as sent.
async function pay(scheme, c, required) {
  const x = new x402Client().register(c.network, scheme);
  const http = new x402HTTPClient(x);
  const payment = await x.createPaymentPayload(required);
  const [, header] = Object.entries(http.encodePaymentSignatureHeader(payment))[0];
  return { header, json: Buffer.from(header, "base64").toString("utf8") };
}

// refundPayment has the official client's refundChannel build its refund request against a
// stub fetch: the probe is answered 402 with the terms, the refund request is kept, not sent.
async function refundPayment(scheme, required, amount) {
  let header;
  const fetch = async (_url, init) => {
    const sent = init?.headers ? new Headers(init.headers).get("PAYMENT-SIGNATURE") : null;
    if (sent) {
      header = sent;
      throw new Error("kept");
    }
    return new Response(null, {
      status: 402,
      headers: { "PAYMENT-REQUIRED": Buffer.from(JSON.stringify(required)).toString("base64") },
    });
  };
  await scheme.refund("https://sandboxd.test/v1/channel", { fetch, amount }).catch((e) => {
    if (e.message !== "kept") throw e;
  });
  decodePaymentSignatureHeader(header);
  return { header, json: Buffer.from(header, "base64").toString("utf8") };
}

async function channelCase(c) {
  const chainId = Number(c.network.split(":")[1]);
  const payer = keys[c.payer];
  const vsigner = c.authorizer === undefined ? payer : keys[c.authorizer];
  const storage = new client.InMemoryClientChannelStorage();
  const opts = { storage };
  if (c.salt) opts.salt = c.salt;
  if (c.authorizer !== undefined) opts.voucherSigner = vsigner;
  const scheme = new evm.BatchSettlementEvmScheme(payer, opts);
  const { accepts, required } = terms(c);
  const config = scheme.buildChannelConfig(accepts);
  const channelId = client.computeChannelId(config, c.network);
  const domain = escrowDomain(chainId);
  const voucherTyped = (max) => ({ domain, types: evm.voucherTypes, primaryType: "Voucher",
    message: { channelId, maxClaimableAmount: BigInt(max) } });

  // A new channel: the client deposits (no RPC, so no balance known).
  const deposit = await pay(scheme, c, required);
  const dp = JSON.parse(deposit.json).payload;
  const auth = dp.deposit.authorization.erc3009Authorization;
  const nonce = viem.keccak256(viem.encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [channelId, BigInt(auth.salt)]));
  const receiveTyped = {
    domain: { name: c.token.name, version: c.token.version, chainId, verifyingContract: viem.getAddress(c.token.asset) },
    types: receiveTypes, primaryType: "ReceiveWithAuthorization",
    message: { from: payer.address, to: evm.ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value: BigInt(dp.deposit.amount),
      validAfter: BigInt(auth.validAfter), validBefore: BigInt(auth.validBefore), nonce },
  };
  await recovered(receiveTyped, auth.signature, payer.address);
  await recovered(voucherTyped(dp.voucher.maxClaimableAmount), dp.voucher.signature, vsigner.address);
  const collectorData = viem.encodeAbiParameters(
    [{ type: "uint256" }, { type: "uint256" }, { type: "uint256" }, { type: "bytes" }],
    [BigInt(auth.validAfter), BigInt(auth.validBefore), BigInt(auth.salt), auth.signature]);

  // A funded channel with charges: the client sends a voucher of charged + amount.
  const charged = BigInt(c.amount) * 3n;
  const balance = BigInt(c.minDeposit) * 2n;
  await storage.set(channelId.toLowerCase(), { balance: balance.toString(), chargedCumulativeAmount: charged.toString() });
  const voucher = await pay(scheme, c, required);
  const vp = JSON.parse(voucher.json).payload;
  await recovered(voucherTyped(vp.voucher.maxClaimableAmount), vp.voucher.signature, vsigner.address);

  // Vouchers signed by the client's signVoucher at the edges of uint128.
  const vouchers = [];
  for (const max of ["0", "1", (charged + BigInt(c.amount)).toString(), ((1n << 128n) - 1n).toString()]) {
    const v = await client.signVoucher(vsigner, channelId, max, c.network);
    await recovered(voucherTyped(max), v.signature, vsigner.address);
    vouchers.push({ max, digest: viem.hashTypedData(voucherTyped(max)), signature: v.signature, signer: vsigner.address });
  }

  // Refund requests: all that is left, and a part.
  const refunds = [];
  for (const amount of [undefined, c.amount]) {
    const r = await refundPayment(scheme, required, amount);
    const rp = JSON.parse(r.json).payload;
    await recovered(voucherTyped(rp.voucher.maxClaimableAmount), rp.voucher.signature, vsigner.address);
    refunds.push(r);
  }

  // The receiver authorizer's Refund signature, as the facilitator signs it.
  const refundTyped = { domain, types: evm.refundTypes, primaryType: "Refund",
    message: { channelId, nonce: 3n, amount: balance - charged } };
  const authorizer = keys.find((k) => k.address === c.receiverAuthorizer);
  const refundSig = await authorizer.signTypedData(refundTyped);
  await recovered(refundTyped, refundSig, authorizer.address);

  // A claim batch of this channel and a made-up second one.
  const other = "0x" + "42".repeat(32);
  const claims = [
    { channelId, maxClaimableAmount: charged + BigInt(c.amount), totalClaimed: charged },
    { channelId: other, maxClaimableAmount: 10n, totalClaimed: 9n },
  ];
  const claimDigest = viem.hashTypedData({ domain, types: evm.claimBatchTypes, primaryType: "ClaimBatch", message: { claims } });

  // Wrongly typed signatures by the voucher signer over the numbers of the voucher payload.
  const max = BigInt(vp.voucher.maxClaimableAmount);
  const wrong = {
    refund_typed: { domain, types: evm.refundTypes, primaryType: "Refund", message: { channelId, nonce: 0n, amount: max } },
    token_domain: { ...voucherTyped(max), domain: receiveTyped.domain },
    other_chain: { ...voucherTyped(max), domain: escrowDomain(chainId === 8453 ? 84532 : 8453) },
  };
  const wrongType = [];
  for (const [name, typed] of Object.entries(wrong)) {
    wrongType.push({ name, maxClaimableAmount: max.toString(), signature: await vsigner.signTypedData(typed) });
  }

  return {
    name: c.name, network: c.network, chainId, requirements: accepts, payerAuthorizer: vsigner.address,
    config, channelId,
    deposit: { header: deposit.header, json: deposit.json, nonce, receiveDigest: viem.hashTypedData(receiveTyped), collectorData },
    voucher: { charged: charged.toString(), header: voucher.header, json: voucher.json },
    vouchers,
    refunds: refunds.map((r) => ({ header: r.header, json: r.json })),
    refundSignature: { nonce: "3", amount: (balance - charged).toString(), digest: viem.hashTypedData(refundTyped),
      signature: refundSig, signer: authorizer.address },
    claimBatch: { claims: claims.map((e) => ({ channelId: e.channelId, maxClaimableAmount: e.maxClaimableAmount.toString(),
      totalClaimed: e.totalClaimed.toString() })), digest: claimDigest },
    wrongType,
  };
}

const out = {
  generator: "x402/channel/testdata/vectors.mjs with @x402/evm 2.27.0 and viem; see its header to regenerate",
  escrow: evm.BATCH_SETTLEMENT_ADDRESS,
  collector: evm.ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  domainSeparators: Object.fromEntries([84532, 8453].map((id) => [String(id), viem.domainSeparator({ domain: escrowDomain(id) })])),
  cases: [],
};
for (const c of cases) out.cases.push(await channelCase(c));
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
