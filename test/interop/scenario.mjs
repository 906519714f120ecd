// scenario.mjs runs one scenario of a multi-scenario interop script (client.mjs, mcp.mjs)
// the way the Go tests read it: one JSON line on stdout with the scenario, the payer and
// the result, or {"scenario","error"} and exit 1; exit 2 when the script overruns its bound.
import { privateKeyToAccount } from "viem/accounts";
import { readKeyFile } from "./chain.mjs";

/**
 * runScenario parses the arguments with parseArgs (its result names .scenario and, when a
 * key is given, .keyFile), runs scenarios[args.scenario](args, account) and prints its
 * result. needsKey(scenario) says whether a scenario must have --key-file. The process
 * ends (code 2) after timeoutMs whatever happens; script names it in that message.
 */
export function runScenario({ script, scenarios, parseArgs, needsKey, timeoutMs }) {
  setTimeout(() => {
    process.stderr.write(`${script}: timed out after ${timeoutMs / 1000}s\n`);
    process.exit(2);
  }, timeoutMs).unref();
  const main = async () => {
    const args = parseArgs(process.argv.slice(2));
    const run = scenarios[args.scenario];
    if (!run) throw new Error(`unknown scenario ${args.scenario}: ${Object.keys(scenarios).join(" | ")}`);
    const account = args.keyFile ? privateKeyToAccount(readKeyFile(args.keyFile)) : null;
    if (!account && needsKey(args.scenario)) throw new Error(`${args.scenario} needs --key-file`);
    const result = await run(args, account);
    process.stdout.write(JSON.stringify({ scenario: args.scenario, payer: account?.address, ...result }) + "\n");
  };
  main().catch((err) => {
    process.stdout.write(JSON.stringify({ scenario: process.argv[2], error: err.message }) + "\n");
    process.exit(1);
  });
}
