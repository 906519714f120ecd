#!/usr/bin/env node
// chain.mjs prepares and reads a local anvil chain for the interop tests and the demo.
// Anvil itself is started by the caller (it owns the process); this only talks JSON-RPC.
//
//   node chain.mjs setup --rpc URL [--mint ADDR=ATOMIC]... [--eth ADDR]... [--channels]
//       puts the test token's runtime code at the Base Sepolia USDC address and Multicall3
//       at its canonical address, mints USDC (atomic units, 6 decimals) and gives ETH;
//       --channels also places the batch-settlement escrow stand-in and its ERC-3009
//       deposit collector at the official addresses.
//   node chain.mjs balance --rpc URL ADDR...       USDC balances (atomic units)
//   node chain.mjs tx --rpc URL HASH               a receipt: status and USDC transfers
//   node chain.mjs transfers --rpc URL ADDR        every USDC transfer to ADDR, with its tx
//   node chain.mjs newkey                          a fresh private key and its address
//   node chain.mjs address KEY_FILE                the address of the key in KEY_FILE
// Every command prints one JSON line on stdout.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createPublicClient, createWalletClient, getAddress, http, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

/** USDC is the Base Sepolia USDC address, where the test token's code is placed. */
export const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
/** MULTICALL3 is the canonical Multicall3 address that the facilitator reads through. */
export const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
/** ESCROW is the official address of the x402 batch-settlement escrow, where its stand-in is placed. */
export const ESCROW = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
/** COLLECTOR is the official address of the escrow's ERC-3009 deposit collector. */
export const COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
/** CHAIN_ID is Base Sepolia's, which anvil is started with. */
export const CHAIN_ID = 84532;
/** MINTER is anvil's last default account (unlocked), which sends the mint transactions. */
const MINTER = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";

const testdata = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "payments", "testdata");
/** token is the compiled test token: {abi, bytecode, deployedBytecode}. */
export const token = JSON.parse(readFileSync(join(testdata, "token.json"), "utf8"));
const multicall3 = JSON.parse(readFileSync(join(testdata, "multicall3.json"), "utf8"));
/** escrow is the compiled batch-settlement escrow stand-in (BatchSettlement.sol). */
export const escrow = JSON.parse(readFileSync(join(testdata, "escrow.json"), "utf8"));
const collector = JSON.parse(readFileSync(join(testdata, "collector.json"), "utf8"));

/** chainFor describes the local chain at rpc for viem. */
export function chainFor(rpc) {
  return {
    id: CHAIN_ID,
    name: "anvil (Base Sepolia id)",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpc] } },
  };
}

/** readKeyFile returns the 0x-prefixed hex key held in path. */
export function readKeyFile(path) {
  const hex = readFileSync(path, "utf8").trim();
  return hex.startsWith("0x") ? hex : `0x${hex}`;
}

/** balanceOf returns the USDC balance of addr in atomic units. */
export async function balanceOf(pub, addr) {
  return pub.readContract({ address: USDC, abi: token.abi, functionName: "balanceOf", args: [getAddress(addr)] });
}

async function setup(rpc, mints, eths, channels) {
  const chain = chainFor(rpc);
  const pub = createPublicClient({ chain, transport: http(rpc) });
  await pub.request({ method: "anvil_setCode", params: [USDC, token.deployedBytecode] });
  await pub.request({ method: "anvil_setCode", params: [MULTICALL3, multicall3.deployedBytecode] });
  if (channels) {
    await pub.request({ method: "anvil_setCode", params: [ESCROW, escrow.deployedBytecode] });
    await pub.request({ method: "anvil_setCode", params: [COLLECTOR, collector.deployedBytecode] });
  }
  for (const addr of eths) {
    // 100 ETH: enough gas for any number of settlements in a test.
    await pub.request({ method: "anvil_setBalance", params: [getAddress(addr), "0x56bc75e2d63100000"] });
  }
  const wallet = createWalletClient({ chain, transport: http(rpc), account: MINTER });
  for (const [addr, amount] of mints) {
    const hash = await wallet.writeContract({
      address: USDC, abi: token.abi, functionName: "mint", args: [getAddress(addr), BigInt(amount)],
    });
    const receipt = await pub.waitForTransactionReceipt({ hash, timeout: 10_000 });
    if (receipt.status !== "success") throw new Error(`mint to ${addr} failed in ${hash}`);
  }
  const name = await pub.readContract({ address: USDC, abi: token.abi, functionName: "name" });
  const placed = channels ? { escrow: ESCROW, collector: COLLECTOR } : {};
  return { ok: true, chainId: await pub.getChainId(), token: USDC, name, multicall3: MULTICALL3, ...placed };
}

async function receipt(rpc, hash) {
  const pub = createPublicClient({ chain: chainFor(rpc), transport: http(rpc) });
  const r = await pub.getTransactionReceipt({ hash });
  const transfers = parseEventLogs({ abi: token.abi, eventName: "Transfer", logs: r.logs })
    .filter((l) => l.address.toLowerCase() === USDC.toLowerCase())
    .map((l) => ({ from: l.args.from, to: l.args.to, value: l.args.value.toString() }));
  return { hash, status: r.status, block: Number(r.blockNumber), from: r.from, to: r.to, gasUsed: r.gasUsed.toString(), transfers };
}

async function transfersTo(rpc, to) {
  const pub = createPublicClient({ chain: chainFor(rpc), transport: http(rpc) });
  const event = token.abi.find((e) => e.type === "event" && e.name === "Transfer");
  const logs = await pub.getLogs({ address: USDC, event, args: { to: getAddress(to) }, fromBlock: 0n, toBlock: "latest" });
  return logs.map((l) => ({
    tx: l.transactionHash, block: Number(l.blockNumber), from: l.args.from, to: l.args.to, value: l.args.value.toString(),
  }));
}

function parseArgs(argv) {
  const out = { rpc: "", mint: [], eth: [], channels: false, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--rpc") out.rpc = argv[++i];
    else if (a === "--mint") out.mint.push(argv[++i].split("="));
    else if (a === "--eth") out.eth.push(argv[++i]);
    else if (a === "--channels") out.channels = true;
    else out.rest.push(a);
  }
  return out;
}

async function main() {
  const [cmd, ...argv] = process.argv.slice(2);
  const args = parseArgs(argv);
  const needRpc = () => {
    if (!args.rpc) throw new Error(`${cmd}: --rpc URL is required`);
    return args.rpc;
  };
  let result;
  switch (cmd) {
    case "setup":
      result = await setup(needRpc(), args.mint, args.eth, args.channels);
      break;
    case "balance": {
      const pub = createPublicClient({ chain: chainFor(needRpc()), transport: http(args.rpc) });
      result = {};
      for (const addr of args.rest) result[getAddress(addr)] = (await balanceOf(pub, addr)).toString();
      break;
    }
    case "tx":
      result = await receipt(needRpc(), args.rest[0]);
      break;
    case "transfers":
      result = { transfers: await transfersTo(needRpc(), args.rest[0]) };
      break;
    case "newkey": {
      const key = generatePrivateKey();
      result = { key, address: privateKeyToAccount(key).address };
      break;
    }
    case "address":
      result = { address: privateKeyToAccount(readKeyFile(args.rest[0])).address };
      break;
    default:
      throw new Error(`unknown command ${JSON.stringify(cmd)}: setup | balance | tx | transfers | newkey | address`);
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // Nothing here may hang a caller: every command is a few RPC calls.
  setTimeout(() => {
    process.stderr.write("chain.mjs: timed out after 30s\n");
    process.exit(2);
  }, 30_000).unref();
  main().catch((err) => {
    process.stderr.write(`chain.mjs: ${err.shortMessage || err.message}\n`);
    process.exit(1);
  });
}
