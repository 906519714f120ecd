#!/usr/bin/env node
// facilitator.mjs serves the official x402 facilitator (@x402/core's x402Facilitator with
// @x402/evm's exact scheme, v2 on eip155:84532 and v1 on base-sepolia) over HTTP on
// 127.0.0.1, settling with a viem wallet on a local chain:
//
//   node facilitator.mjs --rpc URL --key-file FILE [--port 0] [--watch-stdin]
//                        [--channels [--authorizer-key-file FILE]]
//
// --channels also registers @x402/evm's batch-settlement scheme (v2), which needs the escrow
// placed by `chain.mjs setup --channels`; with --authorizer-key-file the facilitator signs
// claims and refunds with that key and advertises it as extra.receiverAuthorizer.
//
// Routes: POST /verify, POST /settle (body {x402Version, paymentPayload, paymentRequirements}),
// GET /supported. It prints {"event":"listening","url":...} on stdout once it listens, one
// JSON line per verify/settle outcome on stderr, and exits on SIGTERM/SIGINT, or with
// --watch-stdin when its stdin closes (the parent that holds it died).
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { chainFor, readKeyFile } from "./chain.mjs";

const MAX_BODY = 1 << 20;

function parseArgs(argv) {
  const out = { rpc: "", keyFile: "", port: 0, watchStdin: false, channels: false, authorizerKeyFile: "" };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--rpc") out.rpc = argv[++i];
    else if (argv[i] === "--key-file") out.keyFile = argv[++i];
    else if (argv[i] === "--port") out.port = Number(argv[++i]);
    else if (argv[i] === "--watch-stdin") out.watchStdin = true;
    else if (argv[i] === "--channels") out.channels = true;
    else if (argv[i] === "--authorizer-key-file") out.authorizerKeyFile = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!out.rpc || !out.keyFile) throw new Error("usage: facilitator.mjs --rpc URL --key-file FILE [--port N]");
  return out;
}

/**
 * buildFacilitator is the official facilitator settling with key on the chain at rpc: the
 * exact scheme always; with opts.channels the batch-settlement scheme too, signing claims and
 * refunds with opts.authorizerKey when given.
 */
export function buildFacilitator(rpc, key, opts = {}) {
  const account = privateKeyToAccount(key);
  const client = createWalletClient({ account, chain: chainFor(rpc), transport: http(rpc) }).extend(publicActions);
  // The wrapper keeps readContract's args defined and binds every call to the client, as
  // the reference facilitator example does.
  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      getCode: (args) => client.getCode(args),
      readContract: (args) => client.readContract({ ...args, args: args.args || [] }),
      verifyTypedData: (args) => client.verifyTypedData(args),
      writeContract: (args) => client.writeContract({ ...args, args: args.args || [] }),
      sendTransaction: (args) => client.sendTransaction(args),
      waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
    },
    { confirmationTimeoutMs: 15_000 },
  );
  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, { signer, networks: "eip155:84532" });
  if (opts.channels) {
    const authorizer = opts.authorizerKey ? privateKeyToAccount(opts.authorizerKey) : undefined;
    facilitator.register("eip155:84532", new BatchSettlementEvmScheme(signer, authorizer));
  }
  return { facilitator, address: account.address };
}

function log(obj) {
  process.stderr.write(JSON.stringify({ t: new Date().toISOString(), ...obj }) + "\n");
}

function send(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

async function readJSON(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY) throw Object.assign(new Error("body too large"), { status: 413 });
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw Object.assign(new Error("body is not JSON"), { status: 400 });
  }
}

function handler(facilitator) {
  return async (req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    try {
      if (req.method === "GET" && path === "/supported") {
        return send(res, 200, facilitator.getSupported());
      }
      if (req.method === "POST" && (path === "/verify" || path === "/settle")) {
        const { paymentPayload, paymentRequirements } = await readJSON(req);
        if (!paymentPayload || !paymentRequirements) {
          return send(res, 400, { error: "Missing paymentPayload or paymentRequirements" });
        }
        const op = path.slice(1);
        let result;
        try {
          result = await facilitator[op](paymentPayload, paymentRequirements);
        } catch (err) {
          // A settlement aborted by a hook is still a SettleResponse, as in the reference.
          if (op === "settle" && /Settlement aborted:/.test(err.message)) {
            result = { success: false, errorReason: err.message.replace("Settlement aborted: ", ""), transaction: "", network: paymentRequirements.network };
          } else {
            throw err;
          }
        }
        log({ op, x402Version: paymentPayload.x402Version, result });
        return send(res, 200, result);
      }
      return send(res, 404, { error: `no route ${req.method} ${path}` });
    } catch (err) {
      log({ op: path, error: err.message });
      return send(res, err.status || 500, { error: err.message });
    }
  };
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const { facilitator, address } = buildFacilitator(args.rpc, readKeyFile(args.keyFile), {
    channels: args.channels,
    authorizerKey: args.authorizerKeyFile ? readKeyFile(args.authorizerKeyFile) : undefined,
  });
  const server = createServer(handler(facilitator));
  server.requestTimeout = 30_000;
  const stop = () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  if (args.watchStdin) {
    process.stdin.on("end", stop);
    process.stdin.on("error", stop);
    process.stdin.resume();
  }
  server.listen(args.port, "127.0.0.1", () => {
    const { port } = server.address();
    process.stdout.write(JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}`, signer: address }) + "\n");
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (err) {
    process.stderr.write(`facilitator.mjs: ${err.message}\n`);
    process.exit(1);
  }
}
