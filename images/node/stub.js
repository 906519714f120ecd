// stub.js is the JavaScript (and TypeScript) stub of the sandbox supervisor
// (internal/supervisor; docs/design/runtimes.md, "The stubs"): it evaluates
// each program in Node's main context with vm, so that a session keeps its
// top-level bindings, imports and awaited values from call to call, and
// answers in the stub protocol (runnerproto's package doc): "ready" on 4
// once warm, then "call <mode> <n> <stdin>" and the code on 3, "done
// <status> <v> <vlen>" and the value on 4. It never sees the run's token,
// the files or the limits: the supervisor owns them.
//
// A one-shot program ends as `node main.js` would (the event loop drains,
// process.exit, an uncaught error), and "done" goes out from the "exit"
// event, after the program's own listeners and before Node's teardown,
// which never comes: the stub then sleeps until the supervisor kills it. A
// session call ends when its evaluation settles; its value is what Node's
// REPL shows.
'use strict';

const fs = require('fs');
const { Writable } = require('stream');

// The program's stdout and stderr write synchronously: Node's own streams
// on a pipe queue what the pipe cannot take at once, and process.exit()
// drops it (`node -e "process.stdout.write('x'.repeat(1 << 20));
// process.exit()" | wc -c` says 65536). Set before anything writes, so
// that no libuv pipe makes the descriptors non-blocking.
class SyncWriter extends Writable {
  constructor(fd) {
    super();
    this.fd = fd;
  }

  _write(chunk, encoding, callback) {
    // In a session, what an earlier call left running (a timer, an
    // abandoned await) writes nowhere.
    if (!ownCall()) return callback();
    try {
      writeAll(this.fd, chunk);
      callback();
    } catch (err) {
      callback(err);
    }
  }
}

// writeAll writes buf whole on fd, waiting out a full pipe when the
// descriptor does not block.
const pause = new Int32Array(new SharedArrayBuffer(4));
function writeAll(fd, buf) {
  for (let off = 0; off < buf.length;) {
    try {
      off += fs.writeSync(fd, buf, off);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

for (const [name, fd] of [['stdout', 1], ['stderr', 2]]) {
  const stream = new SyncWriter(fd);
  Object.defineProperty(process, name, { configurable: true, enumerable: true, get: () => stream });
}

const { AsyncLocalStorage } = require('async_hooks');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');
const workerThreads = require('worker_threads');
const { processTopLevelAwait, rewriteImports } = require('./node-rewrite.js');

const REQUESTS = 3;
const REPLIES = 4;
const INTERRUPTED = 130;
const STUB_FILES = new Set([__filename, require.resolve('./node-rewrite.js')]);
const MAP_COMMENT = /\/\/# sourceMappingURL=data:application\/json(?:;charset=utf-8)?;base64,([A-Za-z0-9+/=]+)\s*$/;

// The globals a program finds, as `node main.js` gives them to its module.
const root = process.cwd();
const mainFile = path.join(root, 'main.js');
const mainModule = new Module('.');
mainModule.filename = mainFile;
mainModule.paths = Module._nodeModulePaths(root);
mainModule.loaded = true;
const mainRequire = Module.createRequire(mainFile);
// `require.main === module` holds, as in a script run by node.
mainRequire.main = mainModule;
const globals = {
  require: mainRequire, module: mainModule, exports: mainModule.exports, __filename: mainFile, __dirname: root,
};
for (const [name, value] of Object.entries(globals)) {
  Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
}
process.argv[1] = mainFile;

// A Worker is a new isolate with its own code range, which the data limit
// cannot hold: refused, for require and import alike.
workerThreads.Worker = class Worker {
  constructor() {
    const err = new Error('worker_threads are not available in this sandbox');
    err.code = 'ERR_WORKER_UNAVAILABLE';
    throw err;
  }
};
Module.syncBuiltinESMExports();

// Stack traces: the stub's frames cut (everything from vm down is the
// stub's machinery), a TypeScript program's frames mapped to its lines.
let sourceMap = null;
let mappedFile = '';
Error.prepareStackTrace = function prepareStackTrace(err, frames) {
  let out;
  try {
    out = String(err);
  } catch {
    out = Object.prototype.toString.call(err);
  }
  for (const frame of frames) {
    const file = frame.getFileName();
    if (file === 'node:vm' || file === 'node:internal/vm') break;
    if (STUB_FILES.has(file)) continue;
    out += '\n    at ' + mapFrame(frame, file);
  }
  return out;
};

// mapFrame is a frame's text, its position mapped through the program's
// source map when it is the program's.
function mapFrame(frame, file) {
  const text = String(frame);
  if (!sourceMap || file !== mappedFile) return text;
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  const entry = sourceMap.findEntry(line - 1, column - 1);
  if (!entry || entry.originalLine === undefined) return text;
  const from = `${file}:${line}:${column}`;
  const at = text.lastIndexOf(from);
  if (at < 0) return text;
  const to = `${file}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  return text.slice(0, at) + to + text.slice(at + from.length);
}

// compile turns a call's code into a script of the main context: imports
// become dynamic, top-level await is rewritten as the REPL does it. wrapped
// reports that the script's value is a promise of {value}.
function compile(src, session) {
  let filename = 'main.js';
  const map = MAP_COMMENT.exec(src);
  if (map) {
    try {
      const payload = JSON.parse(Buffer.from(map[1], 'base64').toString('utf8'));
      if (Array.isArray(payload.sources) && payload.sources[0] === 'main.ts') {
        filename = 'main.ts';
        sourceMap = new Module.SourceMap(payload);
        mappedFile = filename;
      }
    } catch {
      // Not a map the stub can read: the frames stay the JavaScript's.
    }
  }
  const options = { filename, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER };
  if (session && /^\s*\{/.test(src) && /\}\s*;?\s*$/.test(src)) {
    // The REPL's reading: `{a: 1}` is an object, not a block.
    try {
      return { script: new vm.Script(`(${src}\n)`, options), wrapped: false };
    } catch {
      // A block after all.
    }
  }
  const code = rewriteImports(src);
  const awaited = code.includes('await') ? processTopLevelAwait(code) : null;
  return { script: new vm.Script(awaited ?? code, options), wrapped: awaited !== null };
}

// evaluate runs a call's code and returns {value}, or a promise of it
// when the code awaits: a value that is itself a promise stays one, as
// the REPL shows it. Only a session call breaks on SIGINT (its interrupt):
// breakOnSigint starts and joins a watchdog thread at each run (2.5-8 ms
// of a one-shot's hello world on a loaded host's Node 20, some 0.2 ms in
// the image's Node 24), and a one-shot's SIGINT is Node's own.
function evaluate(src, session) {
  const { script, wrapped } = compile(src, session);
  const v = script.runInThisContext({ breakOnSigint: session });
  return wrapped ? v.then((r) => ({ value: r?.value })) : { value: v };
}

// describe is an error as Node prints an uncaught one: the line it was
// thrown at (unless the stub threw it: a refused Worker), its stack and
// its other properties.
function describe(err) {
  if (err === null || typeof err !== 'object' || typeof err.stack !== 'string') {
    return 'Uncaught ' + util.inspect(err);
  }
  let s = util.inspect(err);
  // inspect brackets a stack without frames.
  if (s.startsWith(`[${err.stack}]`)) s = err.stack + s.slice(err.stack.length + 2);
  for (const file of STUB_FILES) {
    if (s.startsWith(file + ':')) s = s.slice(s.indexOf('\n\n') + 2);
  }
  return mapArrow(s);
}

// mapArrow is an error's description with the arrow V8 puts above it
// (`main.ts:3`, the line, a caret) mapped to the TypeScript the program was
// written in: V8 shows the JavaScript esbuild made of it, whose lines and
// text differ. Left as it is when the map does not know the position.
function mapArrow(s) {
  if (!sourceMap || !s.startsWith(mappedFile + ':')) return s;
  const end = s.indexOf('\n\n');
  const [head, , caret] = s.slice(0, end).split('\n');
  const line = Number(head.slice(mappedFile.length + 1));
  const column = caret === undefined ? -1 : caret.indexOf('^');
  if (end < 0 || !Number.isInteger(line) || column < 0) return s;
  const entry = sourceMap.findEntry(line - 1, column);
  const text = sourceMap.payload.sourcesContent?.[0]?.split('\n')[entry?.originalLine];
  if (typeof text !== 'string') return s;
  const marks = caret.slice(column).trimEnd();
  return `${mappedFile}:${entry.originalLine + 1}\n${text}\n${' '.repeat(entry.originalColumn)}${marks}${s.slice(end)}`;
}

// reply writes a reply on 4, whole.
function reply(buf) {
  writeAll(REPLIES, buf);
}

// done answers a call: its status and value (a string, or null for none).
function done(status, value) {
  const v = value === null ? Buffer.alloc(0) : Buffer.from(value, 'utf8');
  const flag = value === null ? 0 : 1;
  reply(Buffer.concat([Buffer.from(`done ${status & 0xff} ${flag} ${v.length}\n`), v]));
}

// The call's stdin becomes descriptor 0, and process.stdin a new stream on
// it; "-" is /dev/null.
let stdinStream = null;
function useStdin(file) {
  if (stdinStream) stdinStream.destroy();
  stdinStream = null;
  try {
    fs.closeSync(0);
  } catch {
    // A program closed it.
  }
  const fd = fs.openSync(file === '-' ? '/dev/null' : file, 'r');
  if (fd !== 0) throw new Error(`stdin opened as descriptor ${fd}, not 0`);
  if (file !== '-') fs.rmSync(file, { force: true });
  Object.defineProperty(process, 'stdin', {
    configurable: true, enumerable: true,
    get() {
      stdinStream ??= new fs.ReadStream(null, { fd: 0, autoClose: false });
      return stdinStream;
    },
  });
}

// oneShot runs a program as `node main.js` would, and says "done" from the
// "exit" event, after the program's listeners.
function oneShot(code) {
  const emit = process.emit;
  let said = false;
  process.emit = function (event, ...args) {
    const r = Reflect.apply(emit, this, [event, ...args]);
    if (event === 'exit' && !said) {
      said = true;
      done(Number(process.exitCode) || 0, null);
      // The supervisor kills the stub once it has answered: Node's own
      // teardown (8-10 ms of a core, measured) would run beside the
      // answer on its way out. Until then the stub sleeps.
      Atomics.wait(pause, 0, 0);
    }
    return r;
  };
  const fatal = (err) => {
    process.stderr.write(describe(err) + '\n');
    process.exit(1);
  };
  const uncaught = (err) => {
    if (process.listenerCount('uncaughtException') > 0) {
      process.emit('uncaughtException', err, 'uncaughtException');
      return;
    }
    fatal(err);
  };
  // Node says "exit" for an error nothing caught (a callback's, a rejection
  // left unhandled) before it prints the error, which would then follow
  // "done": the stub prints it first and exits as Node would.
  process.on('uncaughtExceptionMonitor', (err) => {
    if (process.listenerCount('uncaughtException') === 0) fatal(err);
  });
  try {
    const v = evaluate(code, false);
    if (v instanceof Promise) v.catch(uncaught);
  } catch (err) {
    uncaught(err);
  }
}

// A session's call in progress: its status and whether it is answered.
let current = null;

// calls carries, in a session, each call's object through whatever it
// starts (timers, promises, listeners), so that what an earlier call left
// running is told from the current call's own.
let calls = null;

// ownCall reports whether the code running now is the current call's (or a
// one-shot's, which is all the program's).
function ownCall() {
  return calls === null || (current !== null && calls.getStore() === current);
}

// say writes the stub's own message on 2, whoever runs.
function say(msg) {
  writeAll(2, Buffer.from(msg + '\n'));
}

// ExitCall is what process.exit throws in a session: it ends the call, not
// the stub.
class ExitCall extends Error {}

// finish answers the session's current call once.
function finish(call, status, value) {
  if (call.answered) return;
  call.answered = true;
  if (current === call) current = null;
  if (status === 0 && Number(process.exitCode)) status = Number(process.exitCode);
  process.exitCode = undefined;
  done(status, value);
}

// sessionCall runs one call of a session and answers it when its
// evaluation settles.
function sessionCall(code) {
  const call = { status: 0, answered: false };
  current = call;
  return calls.run(call, () => settle(call, code));
}

// settle evaluates a session call's code and answers the call.
async function settle(call, code) {
  let value = null;
  try {
    const { value: v } = await evaluate(code, true);
    if (v !== undefined) value = util.inspect(v, { showProxy: true });
  } catch (err) {
    if (call.answered || err instanceof ExitCall) return;
    const interrupted = err?.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
    // An interrupt's stack is the stub's, cut: its message says it all.
    say(interrupted ? String(err) : describe(err));
    call.status = interrupted ? INTERRUPTED : 1;
  }
  // Errors and rejections of what the call started at once are its own.
  await new Promise(setImmediate);
  finish(call, call.status, value);
}

// startSession makes process.exit, uncaught errors and SIGINT end a call,
// not the stub.
function startSession() {
  calls = new AsyncLocalStorage();
  process.exit = function exit(code) {
    if (ownCall()) finish(current, Number(code ?? process.exitCode) || 0, null);
    throw new ExitCall('process.exit() ends the call');
  };
  const fail = (err) => {
    if (err instanceof ExitCall || !ownCall()) return;
    say(describe(err));
    current.status = 1;
  };
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
}

// A call awaiting a promise when SIGINT comes is abandoned; between calls
// SIGINT does nothing. (During a call's synchronous part vm's breakOnSigint
// takes it.)
function onSigint() {
  const call = current;
  if (!call) return;
  say('Error: Script execution was interrupted by `SIGINT` while it awaited; the call is abandoned');
  finish(call, INTERRUPTED, null);
}
process.on('SIGINT', onSigint);

// serve reads requests on 3. The first is read by blocking reads, with
// the event loop idle: a one-shot's hand-over then wakes no libuv poll,
// runs no stream's code for the first time and leaves no socket to close
// before the program can end. A session's later calls come through a
// socket on 3, one after the other.
function serve() {
  let buf = Buffer.alloc(0);
  const chunk = Buffer.alloc(1 << 16);
  for (;;) {
    let n;
    try {
      n = fs.readSync(REQUESTS, chunk, 0, chunk.length, null);
    } catch (err) {
      if (err.code === 'EINTR' || err.code === 'EAGAIN') continue;
      throw err;
    }
    if (n === 0) process.reallyExit(0);
    buf = Buffer.concat([buf, chunk.subarray(0, n)]);
    const taken = take(buf, () => fs.closeSync(REQUESTS));
    if (taken === null) return;
    if (taken.length < buf.length) {
      listen(taken);
      return;
    }
  }
}

// listen reads a session's requests on 3 from a socket, after rest (what
// the blocking reads read beyond the first call).
function listen(rest) {
  const requests = new net.Socket({ fd: REQUESTS, readable: true, writable: false });
  const stop = () => requests.destroy();
  let buf = take(rest, stop);
  requests.on('data', (chunk) => {
    if (buf !== null) buf = take(Buffer.concat([buf, chunk]), stop);
  });
  requests.on('end', () => process.reallyExit(0));
}

// take runs the whole requests at the start of buf, one "call o" (after
// which the stub reads no more: it calls close before the program and
// returns null) or a session's "call s" one after the other, and returns
// what follows them.
function take(buf, close) {
  for (;;) {
    const req = parse(buf);
    if (req === null) return buf;
    const { mode, stdin, code } = req;
    buf = req.rest;
    try {
      useStdin(stdin);
    } catch (err) {
      // The call cannot have its stdin: it fails, and the stub goes on.
      say(`node stub: stdin: ${err.message}`);
      done(1, null);
      if (mode === 'o') process.reallyExit(1);
      continue;
    }
    if (mode === 'o') {
      close();
      process.removeListener('SIGINT', onSigint);
      oneShot(code);
      return null;
    }
    if (!calls) startSession();
    sessionCall(code);
  }
}

// parse reads the request at the start of buf: {mode, stdin, code, rest},
// or null when buf does not hold it whole yet. A malformed one ends the
// stub.
function parse(buf) {
  const nl = buf.indexOf(10);
  if (nl < 0) return null;
  const [word, mode, n, stdin] = buf.subarray(0, nl).toString('latin1').split(' ');
  const size = Number(n);
  if (word !== 'call' || !/^[os]$/.test(mode) || !Number.isSafeInteger(size) || size < 0 || !stdin) {
    say('node stub: malformed request');
    process.reallyExit(2);
  }
  if (buf.length < nl + 1 + size) return null;
  const code = buf.subarray(nl + 1, nl + 1 + size).toString('utf8');
  return { mode, stdin, code, rest: buf.subarray(nl + 1 + size) };
}

// warmUp compiles and runs what a first program would (acorn, the rewrite,
// the loader, an await) and starts libuv's pool, so that neither costs the
// first program, and the loader's one-time warning is said before "ready".
async function warmUp() {
  const { value: v } = await evaluate('import "node:util";\nawait Promise.resolve(0);\n[1].map((x) => x + 1)', true);
  util.inspect(v);
  String(new Error('warm').stack);
  await fs.promises.stat(root);
  // A one-shot's hand-over and output run on the critical path: a call's
  // stdin (the one of a call without any) and a line through console on
  // each stream, written to /dev/null, are their first runs here.
  // So are a request's parsing and a one-shot's evaluation (no
  // breakOnSigint, no await: another path than the session's above).
  const warm = Buffer.from("console.log('warm')\n");
  const req = parse(Buffer.concat([Buffer.from(`call o ${warm.length} -\n`), warm]));
  useStdin(req.stdin);
  const sink = fs.openSync('/dev/null', 'w');
  process.stdout.fd = process.stderr.fd = sink;
  try {
    evaluate(req.code, false);
    console.log('warm %s', 'up');
    console.error(new Error('warm'));
  } finally {
    process.stdout.fd = 1;
    process.stderr.fd = 2;
    fs.closeSync(sink);
  }
  // It also drops the SIGINT listener: its first run, on a signal no one
  // sends the stub.
  const none = () => {};
  process.on('SIGUSR2', none);
  process.removeListener('SIGUSR2', none);
  await new Promise(setImmediate);
}

warmUp().then(() => {
  reply(Buffer.from('ready\n'));
  serve();
}, (err) => {
  say('node stub: warm-up failed: ' + describe(err));
  process.reallyExit(2);
});
