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
// terms had quoted maxTimeoutSeconds S (the official client signs now + maxTimeoutSeconds);
// the payment still echoes the terms entry as quoted (the service refuses an edited one).
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

// sign has the official client sign a payment for required; with quoted (the terms as
// the service sent them), the payment echoes the entry as quoted.
async function sign(account, required, quoted) {
  const { httpClient, payload } = await signPayment(account, required);
  if (quoted) {
    payload.accepted = quoted.accepts.find((a) => a.scheme === payload.accepted.scheme && a.network === payload.accepted.network);
  }
  const [name, value] = Object.entries(httpClient.encodePaymentSignatureHeader(payload))[0];
  return { name, value, payer: account.address };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const quoted = await unpaidTerms(args.url);
  const required = args.validFor
    ? { ...quoted, accepts: quoted.accepts.map((a) => ({ ...a, maxTimeoutSeconds: args.validFor })) }
    : quoted;
  const accounts = args.fresh
    ? Array.from({ length: args.fresh }, () => privateKeyToAccount(generatePrivateKey()))
    : [privateKeyToAccount(readKeyFile(args.keyFile))];
  const headers = [];
  for (const account of accounts) headers.push(await sign(account, required, args.validFor ? quoted : null));
  process.stdout.write(JSON.stringify({ headers }) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: err.message }) + "\n");
  process.exit(1);
});
