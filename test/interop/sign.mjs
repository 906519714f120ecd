#!/usr/bin/env node
// sign.mjs signs x402 payments with the official client (@x402/core's x402Client and
// @x402/evm's exact scheme) without sending them, so that the Go interop tests can play a
// hostile payer with genuine signatures: hang up mid-run, replay, flood with unfunded keys.
// It asks URL for the terms (an unpaid POST, answered 402) and prints one JSON line:
// {"headers":[{"name":"PAYMENT-SIGNATURE","value":"..."}, ...]}.
//
//   node sign.mjs --url URL/v1/code (--key-file FILE | --fresh N) [--valid-for SECONDS]
//
// --fresh N signs N payments, each by a new random key that holds nothing (unfunded).
// --valid-for S makes the client sign an authorization valid S seconds ahead, as if the
// terms had quoted maxTimeoutSeconds S (the official client signs now + maxTimeoutSeconds).
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { readKeyFile } from "./chain.mjs";
import { signPayment, unpaidTerms } from "./payer.mjs";

function parseArgs(argv) {
  const out = { url: "", keyFile: "", fresh: 0, validFor: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--url") out.url = argv[++i];
    else if (a === "--key-file") out.keyFile = argv[++i];
    else if (a === "--fresh") out.fresh = Number(argv[++i]);
    else if (a === "--valid-for") out.validFor = Number(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.url || (!out.keyFile && !out.fresh)) throw new Error("--url and one of --key-file, --fresh are required");
  return out;
}

async function sign(account, required) {
  const { headers } = await signPayment(account, required);
  const [name, value] = Object.entries(headers)[0];
  return { name, value, payer: account.address };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const required = await unpaidTerms(args.url);
  if (args.validFor) required.accepts = required.accepts.map((a) => ({ ...a, maxTimeoutSeconds: args.validFor }));
  const accounts = args.fresh
    ? Array.from({ length: args.fresh }, () => privateKeyToAccount(generatePrivateKey()))
    : [privateKeyToAccount(readKeyFile(args.keyFile))];
  const headers = [];
  for (const account of accounts) headers.push(await sign(account, required));
  process.stdout.write(JSON.stringify({ headers }) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: err.message }) + "\n");
  process.exit(1);
});
