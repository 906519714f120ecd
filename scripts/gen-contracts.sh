#!/usr/bin/env bash
# gen-contracts.sh compiles the test contracts in payments/testdata with solc-js (the npm
# package pinned in test/interop/) into JSON beside them, {"abi":[...],"bytecode":"0x...",
# "deployedBytecode":"0x..."}:
#   EIP3009Token.sol    -> token.json       (a USDC stand-in with EIP-3009, open mint)
#   Multicall3.sol      -> multicall3.json  (tryAggregate, for the facilitator's reads)
#   BatchSettlement.sol -> escrow.json      (BatchSettlement, the x402 batch-settlement escrow stand-in)
#                       -> collector.json   (DepositCollector3009, its ERC-3009 deposit collector)
# The output is checked in; run this again only after changing a Solidity source.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/test/interop/setup.sh"

TESTDATA="$root/payments/testdata" NODE_PATH="$root/test/interop/node_modules" \
node --input-type=module -e '
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
const require = createRequire(process.env.NODE_PATH + "/");
const solc = require("solc");
const dir = process.env.TESTDATA;
const targets = [
  ["EIP3009Token.sol", "EIP3009Token", "token.json"],
  ["Multicall3.sol", "Multicall3", "multicall3.json"],
  ["BatchSettlement.sol", "BatchSettlement", "escrow.json"],
  ["BatchSettlement.sol", "DepositCollector3009", "collector.json"],
];
for (const [file, name, outFile] of targets) {
  const input = {
    language: "Solidity",
    sources: { [file]: { content: readFileSync(`${dir}/${file}`, "utf8") } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "shanghai",
      metadata: { bytecodeHash: "none" },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input)));
  for (const e of out.errors || []) console.error(e.formattedMessage);
  if ((out.errors || []).some((e) => e.severity === "error")) process.exit(1);
  const c = out.contracts[file][name];
  const json = {
    abi: c.abi,
    bytecode: "0x" + c.evm.bytecode.object,
    deployedBytecode: "0x" + c.evm.deployedBytecode.object,
  };
  writeFileSync(`${dir}/${outFile}`, JSON.stringify(json, null, 2) + "\n");
  console.error(`gen-contracts: solc ${solc.version()} wrote ${dir}/${outFile}`);
}
'
