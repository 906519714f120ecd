// bash_session_probe.js drives an interactive bash as the supervisor would drive
// Bash's session stub (docs/design/runtimes.md, section 4.7): request lines on
// its descriptor 0, code on 3, replies on 4, the rcfile bash_session_probe.rc.
// Run by test/scripts/node_probe.sh in the Node image.
const { spawn } = require('child_process'), fs = require('fs');
const sh = spawn('bash', ['--noprofile', '--noediting', '--rcfile', '/probe/bash_session_probe.rc', '-i'],
  { stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true, cwd: '/tmp' });
let out = '', err = '', replies = [], waiter = null;
sh.stdout.on('data', (d) => (out += d)); sh.stderr.on('data', (d) => (err += d));
sh.stdio[4].on('data', (d) => { replies.push(...String(d).trim().split('\n')); if (waiter) waiter(); });
const next = () => new Promise((r) => { if (replies.length) return r(replies.shift()); waiter = () => { waiter = null; r(replies.shift()); }; });
let n = 0;
async function call(code, stdin = '', interruptAfter = 0) {
  const path = `/dev/shm/.stdin-${n++}`; fs.writeFileSync(path, stdin, { mode: 0o600 });
  out = ''; err = '';
  const c = Buffer.from(code);
  sh.stdio[3].write(c);
  sh.stdin.write(`__sb_read ${c.length} ${path} && eval "$__sb_code" <"$__sb_in"\n`);
  const t = Date.now();
  if (interruptAfter) setTimeout(() => process.kill(-sh.pid, 'SIGINT'), interruptAfter);
  const r = await Promise.race([next(), new Promise((res) => setTimeout(() => res('(no reply in 3 s)'), 3000))]);
  const took = Date.now() - t; // to the reply; the output is read 30 ms later
  await new Promise((res) => setTimeout(res, 30));
  fs.rmSync(path, { force: true });
  console.log(JSON.stringify(code.slice(0, 38)).padEnd(42), r.padEnd(12), `${took} ms`.padEnd(8), 'out', JSON.stringify(out), 'err', JSON.stringify(err.slice(0, 60)));
}
(async () => {
  console.log('first reply:', await next(), '| startup stderr', JSON.stringify(err.slice(0, 80)));
  await call('x=41; declare -A m=([k]=v); f() { echo "f:$1"; }; cd /tmp; export E=1');
  await call('echo $((x+1)) ${m[k]} $E $(pwd); f hi');
  await call('read line; echo "got:$line"; cat', 'first\nrest\n');
  await call('nosuchcommand\necho next\nfalse');
  await call('sleep 10; echo after-sleep', '', 300);
  await call('echo alive $x; (exit 3)');
  await call('seq 5 | awk \'{s += $1} END {print s}\'; printf "a\\nb\\na\\n" | sort | uniq -c | sort -rn | head -1');
  await call('trap "" INT; for ((;;)); do :; done', '', 300);
  console.log('shell alive:', sh.exitCode === null);
  process.kill(-sh.pid, 'SIGKILL'); process.exit(0);
})();
