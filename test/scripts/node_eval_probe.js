// node_eval_probe.js tries the JavaScript stub's evaluator (docs/design/runtimes.md,
// section 4.7) on the image's Node, run by test/scripts/node_probe.sh: static
// imports rewritten to dynamic ones with Debian's acorn, top-level await as
// Node's REPL rewrites it (internal/repl/await: the probe runs with
// --expose-internals; the stub is to carry its own copy), vm in the main
// context with breakOnSigint, values shown as the REPL shows them, each call's
// stdin made descriptor 0, and a TypeScript stack mapped through esbuild's
// inline source map.
'use strict';
const vm = require('vm');
const util = require('util');
const fs = require('fs');
const acorn = require('acorn');
const { SourceMap } = require('module');
const { processTopLevelAwait } = require('internal/repl/await');

globalThis.require = require('module').createRequire('/tmp/main.js');

// rewriteImports turns top-level import declarations into awaited dynamic imports.
function rewriteImports(src) {
  let ast;
  try {
    ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true });
  } catch {
    return src; // let V8 report the syntax error
  }
  let out = '';
  let pos = 0;
  for (const n of ast.body) {
    if (n.type !== 'ImportDeclaration') continue;
    const tmp = `__import${n.start}`;
    let rep = `const ${tmp} = await import(${JSON.stringify(n.source.value)});`;
    const named = [];
    for (const s of n.specifiers) {
      if (s.type === 'ImportNamespaceSpecifier') rep += ` const ${s.local.name} = ${tmp};`;
      else if (s.type === 'ImportDefaultSpecifier') rep += ` const ${s.local.name} = ${tmp}.default;`;
      else named.push(s.imported.name === s.local.name ? s.local.name : `${s.imported.name}: ${s.local.name}`);
    }
    if (named.length) rep += ` const { ${named.join(', ')} } = ${tmp};`;
    out += src.slice(pos, n.start) + rep;
    pos = n.end;
  }
  return out + src.slice(pos);
}

// evaluate runs one call's code in the main context and returns its value.
async function evaluate(src, filename = 'main.js') {
  const code = rewriteImports(src);
  const wrapped = processTopLevelAwait(code);
  const script = new vm.Script(wrapped || code, { filename,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
  const v = script.runInThisContext({ breakOnSigint: true });
  return wrapped ? (await v).value : v;
}

const calls = [
  'let x = 1\nconst dbl = (a) => a * 2\ndbl(x) + 1',
  'x += 1; x',
  'const y = await Promise.resolve(41); y + 1',
  'y',
  "import { readFileSync as rf } from 'node:fs'\nimport * as path from 'node:path'\nimport os from 'node:os'\n" +
    "typeof rf + ' ' + typeof path.join + ' ' + typeof os.cpus",
  'rf("/etc/hostname", "utf8").length > 0',
  'class K { constructor() { this.v = 3 } }',
  'new K().v',
  '({a: 1, b: [1, 2, {c: new Map([[1, 2]])}]})',
  'let x = 5',
  'const s = await new Promise((r) => setTimeout(() => r("late"), 50)); s',
  'for (;;) {}',
];

// stdinFor makes a call's stdin descriptor 0, as the stub does.
function stdinFor(i, text) {
  const path = `/dev/shm/.stdin-${i}`;
  fs.writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  fs.closeSync(0);
  const fd = fs.openSync(path, 'r');
  fs.unlinkSync(path);
  return fd;
}

const tsOut = "const p = { a: 1 };\nfunction f(x) {\n  throw new Error(\"at line 6 of main.ts\");\n}\nf(p.a);\n//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsibWFpbi50cyJdLAogICJzb3VyY2VzQ29udGVudCI6IFsiaW50ZXJmYWNlIFAge1xuICBhOiBudW1iZXJcbn1cbmNvbnN0IHA6IFAgPSB7IGE6IDEgfVxuZnVuY3Rpb24gZih4OiBudW1iZXIpOiBudW1iZXIge1xuICB0aHJvdyBuZXcgRXJyb3IoJ2F0IGxpbmUgNiBvZiBtYWluLnRzJylcbn1cbmYocC5hKVxuIl0sCiAgIm1hcHBpbmdzIjogIkFBR0EsTUFBTSxJQUFPLEVBQUUsR0FBRyxFQUFFO0FBQ3BCLFNBQVMsRUFBRSxHQUFtQjtBQUM1QixRQUFNLElBQUksTUFBTSxzQkFBc0I7QUFDeEM7QUFDQSxFQUFFLEVBQUUsQ0FBQzsiLAogICJuYW1lcyI6IFtdCn0K\n";

(async () => {
  process.on('SIGINT', () => {}); // the stub's: between calls SIGINT does nothing
  // TypeScript first: its f and p would clash with the calls' (one context, as in a session).
  const b64 = tsOut.match(/sourceMappingURL=data:application\/json;base64,(.*)$/m)[1];
  const map = new SourceMap(JSON.parse(Buffer.from(b64, 'base64').toString()));
  const prepare = Error.prepareStackTrace;
  Error.prepareStackTrace = (err, frames) => String(err) + frames.map((f) => {
    if (f.getFileName() !== 'main.ts') return '';
    const e = map.findEntry(f.getLineNumber() - 1, f.getColumnNumber() - 1);
    return `\n    at ${f.getFunctionName() || '<anonymous>'} (main.ts:${e.originalLine + 1}:${e.originalColumn + 1})`;
  }).join('');
  try {
    await evaluate(tsOut, 'main.ts');
  } catch (e) {
    console.log('TypeScript, mapped:', e.stack.split('\n').filter((l) => /^Error|^ +at .*main.ts/.test(l)).join(' |'));
  }
  Error.prepareStackTrace = prepare;
  for (const code of calls) {
    if (code.startsWith('for')) {
      require('child_process').spawn('bash', ['-c', `sleep 0.3; kill -INT ${process.pid}`], { stdio: 'ignore' });
    }
    const t = process.hrtime.bigint();
    let shown;
    try {
      const v = await evaluate(code);
      shown = v === undefined ? '(no value)' : util.inspect(v);
    } catch (e) {
      shown = `error: ${e.name}: ${e.message}`;
    }
    const ms = (Number(process.hrtime.bigint() - t) / 1e6).toFixed(2);
    console.log(`${JSON.stringify(code.slice(0, 36)).padEnd(40)} ${shown} (${ms} ms)`);
  }
  for (const [i, text] of ['first call\n', 'second call\n'].entries()) {
    const fd = stdinFor(i, text);
    console.log(`stdin of call ${i}: descriptor ${fd}, readFileSync(0) ${JSON.stringify(fs.readFileSync(0, 'utf8'))}`);
  }
  const t = process.hrtime.bigint();
  for (let i = 0; i < 200; i++) await evaluate('1 + ' + i);
  console.log('a warm one-line evaluation, mean of 200:', (Number(process.hrtime.bigint() - t) / 200 / 1e6).toFixed(2), 'ms');
  process.exit(0);
})();
