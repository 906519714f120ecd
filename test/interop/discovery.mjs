#!/usr/bin/env node
// discovery.mjs checks the x402 discovery extension ("bazaar") in sandboxd's terms with
// the official @x402/extensions package, as a directory of paid endpoints reads it. It
// takes the terms of an unpaid call, validates extensions.bazaar (validateDiscoveryExtension:
// info against its schema; validateDiscoveryExtensionSpec: the protocol's rules), then
// builds a PaymentPayload with the official client (which echoes the extensions) and
// extracts the discovery info from it as a facilitator does (extractDiscoveryInfo). It
// prints one JSON line, the extension itself in it (bazaar):
//
//   node discovery.mjs http --url URL/v1/code --key-file FILE
//   node discovery.mjs mcp  --url URL/mcp     --key-file FILE [--tool NAME]  (run_python)
//   node discovery.mjs mcp-open --url URL/mcp --key-file FILE   (open_session)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { extractDiscoveryInfo, validateDiscoveryExtension, validateDiscoveryExtensionSpec } from "@x402/extensions/bazaar";
import { privateKeyToAccount } from "viem/accounts";
import { readKeyFile } from "./chain.mjs";
import { signPayment, unpaidTerms } from "./payer.mjs";

function arg(name, otherwise) {
  const i = process.argv.indexOf(name);
  if (i >= 0) return process.argv[i + 1];
  if (otherwise === undefined) throw new Error(`${name} is required`);
  return otherwise;
}

// mcpTerms reads the terms from an unpaid tools/call of tool, listing the tools first.
async function mcpTerms(url, tool, args) {
  const client = new Client({ name: "sandboxd-discovery", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.listTools();
  const result = await client.callTool({ name: tool, arguments: args });
  await client.close();
  if (!result.isError) throw new Error("an unpaid call was not refused");
  return result.structuredContent;
}

async function main() {
  const kind = process.argv[2];
  const terms = kind === "mcp" ? await mcpTerms(arg("--url"), arg("--tool", "run_python"), { code: "1" })
    : kind === "mcp-open" ? await mcpTerms(arg("--url"), "open_session", {})
    : await unpaidTerms(arg("--url"));
  const bazaar = terms.extensions?.bazaar;
  if (!bazaar) throw new Error(`no extensions.bazaar in the terms: ${JSON.stringify(terms.extensions)}`);
  const account = privateKeyToAccount(readKeyFile(arg("--key-file")));
  const { payload } = await signPayment(account, terms);
  const discovered = extractDiscoveryInfo(payload, payload.accepted);
  process.stdout.write(JSON.stringify({
    kind,
    valid: validateDiscoveryExtension(bazaar),
    spec: validateDiscoveryExtensionSpec(bazaar),
    discovered,
    bazaar,
  }) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: err.message }) + "\n");
  process.exit(1);
});
