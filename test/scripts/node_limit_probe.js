// node_limit_probe.js plays the JavaScript stub and its supervisor for
// test/scripts/node_probe.sh: it warms up (the libuv pool started), caps its
// own RLIMIT_DATA at VmData now + (D - RssAnon now), as the supervisor does
// when a stub says it is ready (docs/design/runtimes.md, section 5), then
// runs the program named by its argument and reports how it ended.
'use strict';
const fs = require('fs');
const cp = require('child_process');

// status returns fields of /proc/self/status in MiB (Threads as a count).
function status() {
  const s = fs.readFileSync('/proc/self/status', 'utf8');
  const kib = (k) => Number(s.match(new RegExp(k + ':\\s+(\\d+)'))[1]);
  return { data: kib('VmData') >> 10, anon: kib('RssAnon') >> 10, rss: kib('VmRSS') >> 10, threads: kib('Threads') };
}

const programs = {
  hello: () => console.log('hello'),
  array: () => { const a = []; for (;;) a.push(new Array(1e5).fill(1.5)); },
  objects: () => { const a = []; for (let i = 0; ; i++) a.push({ i, s: 'k' + i }); },
  string: () => { let s = 'x'; for (;;) s += s; },
  bufferBig: () => Buffer.alloc(1 << 30, 1),
  bufferGrow: () => { const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1)); },
  typed: () => { const a = []; for (;;) a.push(new Float64Array(1 << 17).fill(1)); },
  worker: () => {
    const { Worker } = require('worker_threads');
    const w = new Worker('require("worker_threads").parentPort.postMessage(1)', { eval: true });
    w.on('message', () => { console.log('worker ran'); w.terminate(); });
  },
  spawn: () => console.log('child ulimit -d', cp.execFileSync('bash', ['-c', 'ulimit -d']).toString().trim()),
};

(async () => {
  const D = Number(process.env.D_MIB);
  await fs.promises.readFile('/etc/hostname');
  const w = status();
  const limit = w.data + (D - w.anon);
  cp.execFileSync('prlimit', ['--pid', String(process.pid), `--data=${limit << 20}:${limit << 20}`]);
  console.error(`warm: VmData ${w.data} MiB, RssAnon ${w.anon}, RSS ${w.rss}, threads ${w.threads};` +
    ` RLIMIT_DATA ${limit} MiB (allowance ${D - w.anon})`);
  const t0 = Date.now();
  process.on('exit', (code) => console.error(`exit ${code} after ${Date.now() - t0} ms`));
  try {
    programs[process.argv[2]]();
  } catch (e) {
    console.log('caught', e.constructor.name, e.message);
    process.exitCode = 1;
  }
})();
