#!/usr/bin/env node
// openapi.mjs validates sandboxd's OpenAPI document with @apidevtools/swagger-parser (the
// OpenAPI 3.1 schema and its own semantic checks, $refs resolved) and prints one JSON line:
//
//   node openapi.mjs --url URL/v1/openapi.json
import SwaggerParser from "@apidevtools/swagger-parser";

async function main() {
  const i = process.argv.indexOf("--url");
  if (i < 0) throw new Error("--url is required");
  const res = await fetch(process.argv[i + 1], { signal: AbortSignal.timeout(30_000) });
  if (res.status !== 200) throw new Error(`GET: status ${res.status}`);
  const doc = await res.json();
  const api = await SwaggerParser.validate(doc);
  process.stdout.write(JSON.stringify({ valid: true, openapi: api.openapi, paths: Object.keys(api.paths) }) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ valid: false, error: err.message }) + "\n");
  process.exit(0);
});
