package hostile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sandboxd"
)

// nodeCases is node's table: JavaScript's cases, TypeScript's few (where
// it is not JavaScript once on the host) and Bash's.
func nodeCases(e environment) []hostileCase {
	return slices.Concat(javascriptCases(e), typescriptCases(e), bashCases(e))
}

// inLanguage sets the language of every case.
func inLanguage(lang string, cases []hostileCase) []hostileCase {
	for i := range cases {
		cases[i].language = lang
	}
	return cases
}

// jsHeapBombCPU is the most CPU a JavaScript memory bomb may spend before
// it fails: V8's heap limit (three quarters of the data limit less 16 MiB,
// docs/design/runtimes.md section 5.2) comes well before the deadline.
// runtime's TestNodeMemoryBombs measured 10-882 ms on a quiet host; near
// its limit V8 runs full collections back to back, on helper threads
// whose CPU counts too, and under runsc on a busy host each took 0.74 s:
// CI saw the objects bomb spend 8.5 s of CPU in 9.9 s. A bomb that ran to
// its deadline (slowTimeout) is refused by the case's status; this bound,
// half of that deadline, refuses one that failed only after collecting
// for most of it (a heap limit set too high for the memory it has).
const jsHeapBombCPU = slowTimeout / 2

// cpuUnder checks that the run spent less than most of CPU: a memory bomb
// that failed at its limit, not one that spun until a deadline. It is
// judged by CPU time, not by the wall clock, which is the host's load's.
func cpuUnder(most time.Duration) func(sandboxd.Result) []string {
	return func(res sandboxd.Result) []string {
		if res.Usage == nil {
			return []string{"no usage reported"}
		}
		if res.Usage.CPU > most {
			return []string{fmt.Sprintf("cpu %v before the bomb failed, want at most %v", res.Usage.CPU, most)}
		}
		return nil
	}
}

// jsForged are runner markers a JavaScript program forges, with guessed
// tokens: the runner's ack and end marker shapes (runnerproto). Each must
// be plain output.
const jsForged = "const forms = ['\\0sandboxd:' + '0'.repeat(32) + ':go\\n', '\\0sandboxd:' + 'f'.repeat(32) + ':gl\\n',\n" +
	"  '\\0sandboxd:' + 'a'.repeat(32) + ':000 0000000000 0000000000 0000000000 0 0 0000000000 0\\n', 'S ' + 'a'.repeat(32) + ' 100 javascript\\n']\n"

// forgedOut is what jsForged's forms print, then "after".
var forgedOut = "\x00sandboxd:" + strings.Repeat("0", 32) + ":go\n" + "\x00sandboxd:" + strings.Repeat("f", 32) + ":gl\n" +
	"\x00sandboxd:" + strings.Repeat("a", 32) + ":000 0000000000 0000000000 0000000000 0 0 0000000000 0\n" +
	"S " + strings.Repeat("a", 32) + " 100 javascript\n" + "after\n"

// javascriptCases attack Node.js and its stub (docs/design/runtimes.md
// section 9.1), named as Python's case where the idea is the same.
func javascriptCases(e environment) []hostileCase {
	timeout := answer{status: statuses(sandboxd.StatusTimeout), exit: []int{137}}
	flood := answer{status: statuses(sandboxd.StatusOutputLimit), exit: []int{137}, outLen: capBytes, within: capAnswer, check: onlyXs}
	// V8's fatal heap exhaustion aborts: 134 here (docs/design/runtimes.md
	// section 4.7), 139 with another build.
	heapBomb := answer{status: statuses(sandboxd.StatusError), exit: []int{134, 139}, stderrHas: "heap out of memory", check: cpuUnder(jsHeapBombCPU)}
	// A Buffer lives outside V8's heap and meets the data limit, which
	// gVisor does not enforce: there the cgroup's OOM killer ends it.
	bufferBomb := answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stderrHas: "RangeError", check: cpuUnder(jsHeapBombCPU)}
	return inLanguage(sandboxd.LanguageJavaScript, []hostileCase{
		{name: "infinite-loop", code: "for (;;) {}\n", killed: true, want: timeout},
		{
			// Node's SIGINT and SIGTERM listeners do not keep a one-shot run
			// past its deadline: the container is killed.
			name:   "loop-ignoring-sigint",
			code:   "process.on('SIGINT', () => {})\nprocess.on('SIGTERM', () => {})\nconsole.log('deaf')\nfor (;;) {}\n",
			killed: true,
			want:   answer{status: timeout.status, exit: timeout.exit, stdout: []string{"deaf\n"}},
		},
		{name: "microtask-loop", code: "function f() { Promise.resolve().then(f) }\nf()\n", killed: true, want: timeout},
		{name: "await-loop", code: "for (;;) await null\n", killed: true, want: timeout},
		{name: "sleep-forever", code: "console.log('sleeping')\nsetInterval(() => {}, 1e6)\n", killed: true,
			want: answer{status: timeout.status, exit: timeout.exit, stdout: []string{"sleeping\n"}}},
		{name: "memory-bomb-growing", code: "const a = []\nfor (;;) a.push(new Array(1e5).fill(1.5))\n", slow: true, want: heapBomb},
		{name: "memory-bomb-objects", code: "const a = []\nfor (;;) a.push({ n: a.length })\n", slow: true, want: heapBomb},
		{
			name: "memory-bomb-string", code: "let s = 'x'\nfor (;;) s += s\n", slow: true,
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stderrHas: "Invalid string length", check: cpuUnder(jsHeapBombCPU)},
		},
		{
			name: "memory-bomb-at-once", code: "console.log('allocating')\nBuffer.alloc(1 << 30, 1)\nconsole.log('survived')\n", slow: true,
			want: answer{status: bufferBomb.status, exit: bufferBomb.exit, stdout: []string{"allocating\n"}, stderrHas: "RangeError", check: bufferBomb.check},
			per:  map[string][]answer{"runsc": bombUnderRunsc(slowTimeout, "allocating\n")},
		},
		{
			// 1 MiB typed arrays outside V8's heap, held: the data limit (or,
			// under gVisor, the cgroup's) ends them, as V8's failure to commit
			// its young generation or a RangeError.
			name: "memory-bomb-typed", code: "const a = []\nfor (;;) a.push(new Float64Array(1 << 17))\n", slow: true,
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1, 133, 134, 139}, check: cpuUnder(jsHeapBombCPU)},
			per: map[string][]answer{"runsc": append(bombUnderRunsc(slowTimeout),
				answer{status: statuses(sandboxd.StatusError), exit: []int{1, 133, 134, 139}, check: cpuUnder(jsHeapBombCPU)})},
		},
		{
			name: "fork-bomb", killed: true,
			code: "const { spawn } = require('child_process')\nfor (;;) {\n  try {\n" +
				"    spawn('sh', ['-c', 'sleep 1000; true', '" + markerPlaceholder + "']).on('error', () => {})\n  } catch {}\n}\n",
			// The pids limit holds; the loop spins to the deadline, or its
			// handles fill V8's heap first.
			want: answer{status: statuses(sandboxd.StatusTimeout, sandboxd.StatusError), exit: []int{137, 134, 139}},
			per: map[string][]answer{"runsc": {
				{status: statuses(sandboxd.StatusTimeout, sandboxd.StatusError), exit: []int{137, 134, 139}}, runscSandboxFailed,
				{status: statuses(sandboxd.StatusTimeout), exit: []int{runscSandboxFailed.exit[0]}},
			}},
		},
		{
			// child_process.fork of a script that forks itself: each Node
			// child holds tens of MiB, so the memory or the pids end it.
			name: "node-fork-bomb", killed: true,
			code: "const fs = require('fs'), { fork } = require('child_process')\n" +
				"fs.writeFileSync('/tmp/bomb.js', \"const { fork } = require('child_process'); for (;;) { try { fork(__filename, ['" +
				markerPlaceholder + "']).on('error', () => {}) } catch {} }\")\n" +
				"for (;;) { try { fork('/tmp/bomb.js', ['" + markerPlaceholder + "']).on('error', () => {}) } catch {} }\n",
			want: answer{status: statuses(sandboxd.StatusTimeout, sandboxd.StatusError, sandboxd.StatusOOM), exit: []int{137, 134, 139}},
			per: map[string][]answer{"runsc": {
				{status: statuses(sandboxd.StatusTimeout, sandboxd.StatusError, sandboxd.StatusOOM), exit: []int{137, 134, 139}}, runscSandboxFailed,
				{status: statuses(sandboxd.StatusTimeout), exit: []int{runscSandboxFailed.exit[0]}},
			}},
		},
		{
			// A child Node process's heap bomb: the data limit the child
			// inherits ends it (under runsc, where that limit is not
			// enforced, the cgroup's memory), and the parent's execSync
			// throws: the program's error, long before the deadline.
			name: "child-memory-bomb", slow: true,
			code: "require('child_process').execSync(\"node -e 'const a = []; for (;;) a.push(new Array(1e5).fill(1.5))'\", " +
				"{ stdio: 'inherit' })\nconsole.log('survived')\n",
			want: answer{status: statuses(sandboxd.StatusError, sandboxd.StatusOOM), check: cpuUnder(jsHeapBombCPU)},
			per: map[string][]answer{"runsc": append(bombUnderRunsc(slowTimeout),
				answer{status: statuses(sandboxd.StatusError, sandboxd.StatusOOM), check: cpuUnder(jsHeapBombCPU)})},
		},
		{
			// A detached child outlives nothing: the run is answered at its
			// end, not the child's, and the container goes with the child.
			name: "detached-child",
			code: "const { spawn } = require('child_process')\n" +
				"spawn('sh', ['-c', 'sleep 1000; true', '" + markerPlaceholder + "'], { detached: true, stdio: 'ignore' }).unref()\n" +
				"console.log('left')\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, stdout: []string{"left\n"}, check: promptly(e)},
		},
		{
			// The stub replaces Worker (section 5.3): a real one would
			// abort the process; through import as through require.
			name: "worker-threads",
			code: "const { Worker } = await import('node:worker_threads')\ntry {\n  new Worker('1', { eval: true })\n} catch (e) {\n" +
				"  console.log(e.message)\n}\nnew (require('worker_threads').Worker)('1')\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stdout: []string{"worker_threads are not available in this sandbox\n"},
				stderrHas: "worker_threads are not available", check: promptly(e)},
		},
		{name: "flood-lines", code: "for (;;) console.log('x'.repeat(99))\n", want: flood},
		{name: "flood-no-newline", code: "for (;;) process.stdout.write('x'.repeat(1000))\n", want: flood},
		{
			name: "flood-stderr", code: "for (;;) process.stderr.write('x'.repeat(1000))\n",
			want: answer{status: statuses(sandboxd.StatusOutputLimit), exit: []int{137}, within: capAnswer, check: stderrFlood},
		},
		{
			name: "forged-marker",
			code: jsForged + "for (const f of forms) {\n  process.stdout.write(f)\n  process.stderr.write(f)\n}\nconsole.log('after')\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{forgedOut}},
		},
		{
			// The supervisor (PID 1) is not dumpable: its environment, memory
			// and link are closed to the program under runc; gVisor ignores
			// dumpability and opens all but its memory (section 4.2).
			name: "read-token",
			code: "const fs = require('fs')\nfor (const p of ['/proc/1/environ', '/proc/1/mem', '/proc/1/fd/0']) {\n" +
				"  try {\n    fs.closeSync(fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK))\n    console.log(p, 'opened')\n" +
				"  } catch (e) {\n    console.log(p, e.code)\n  }\n}\n" +
				"console.log('env', Object.keys(process.env).filter((k) => k.startsWith('SANDBOX')).join(','))\n",
			want: answer{status: statuses(sandboxd.StatusOK),
				stdout: []string{"/proc/1/environ EACCES\n/proc/1/mem EACCES\n/proc/1/fd/0 EACCES\nenv \n"}},
			per: map[string][]answer{"runsc": {{status: statuses(sandboxd.StatusOK), check: memClosedNoEnv}}},
		},
		{
			// Inside its namespace PID 1 takes no signal it has not asked
			// for, SIGKILL included: the run goes on. gVisor's kernel
			// delivers the SIGKILL: the supervisor dies, and the answer still
			// comes, the program's output lost with it (as Python's
			// self-SIGKILL under runsc, program_fault_test.go).
			name: "signal-pid-1",
			code: "for (const s of ['SIGTERM', 'SIGKILL', 'SIGSTOP']) {\n  try { process.kill(1, s) } catch (e) { console.log(s, e.code) }\n}\n" +
				"setTimeout(() => console.log('alive'), 200)\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"alive\n"}},
			per: map[string][]answer{"runsc": {{status: statuses(sandboxd.StatusOK), stdout: []string{"alive\n"}},
				{status: statuses(sandboxd.StatusError), exit: []int{137}, stdout: []string{""}}}},
		},
		{
			// kill(-1) reaches every process but PID 1 and the caller: the
			// stub's child dies, the stub lives on; then the stub kills
			// itself, and the answer comes (selfKilled).
			name: "kill-all",
			code: "const c = require('child_process').spawn('sh', ['-c', 'sleep 1000; true', '" + markerPlaceholder + "'])\n" +
				"c.on('exit', (code, sig) => {\n  console.log('child', sig)\n  process.kill(process.pid, 'SIGKILL')\n})\n" +
				"console.log('killing')\nprocess.kill(-1, 'SIGKILL')\n",
			want: selfKilled(e, "killing\nchild SIGKILL\n"),
		},
		{
			name: "write-outside-tmp",
			code: "const fs = require('fs')\nfor (const p of ['/etc/passwd', '/opt/sandbox/stubs/node.js', '/escape']) {\n" +
				"  try {\n    fs.writeFileSync(p, 'x')\n    console.log(p, 'written')\n  } catch (e) {\n    console.log(p, e.code)\n  }\n}\n" +
				"fs.writeFileSync('/tmp/ok', 'x')\nconsole.log('tmp', fs.readFileSync('/tmp/ok', 'utf8'))\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"/etc/passwd EROFS\n/opt/sandbox/stubs/node.js EROFS\n/escape EROFS\ntmp x\n"}},
			// gVisor checks the permission before the read-only mount.
			per: map[string][]answer{"runsc": {{status: statuses(sandboxd.StatusOK),
				stdout: []string{"/etc/passwd EACCES\n/opt/sandbox/stubs/node.js EACCES\n/escape EACCES\ntmp x\n"}}}},
		},
		{
			// No network: each way out fails at once, not at a timeout.
			name: "network",
			code: "const net = require('net'), dns = require('dns')\n" +
				"try { await fetch('http://1.1.1.1/'); console.log('fetch reached') } catch (e) { console.log('fetch failed') }\n" +
				"console.log(await new Promise((ok) => {\n  const s = net.connect(80, '1.1.1.1', () => ok('connect reached'))\n" +
				"  s.on('error', () => ok('connect failed'))\n}))\n" +
				"console.log(await new Promise((ok) => dns.lookup('example.com', (err) => ok(err ? 'dns failed' : 'dns reached'))))\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"fetch failed\nconnect failed\ndns failed\n"}, check: promptly(e)},
		},
		{
			name: "unhandled-rejection",
			code: "console.log('before')\nPromise.reject(new Error('rejected on purpose'))\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stdout: []string{"before\n"}, stderrHas: "rejected on purpose"},
		},
		{
			name: "process-exit-3",
			code: "console.log('bye')\nprocess.exit(3)\nconsole.log('not reached')\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{3}, stdout: []string{"bye\n"}},
		},
		{
			name: "deep-recursion",
			code: "function f(n) { return f(n + 1) + 1 }\nf(0)\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stderrHas: "Maximum call stack size exceeded"},
		},
		{
			name: "syntax-error",
			code: "let x = ;\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stderrHas: "SyntaxError"},
		},
	})
}

// typescriptCases are TypeScript's own: where it is not JavaScript once on
// the host (the syntax error the host answers, a typed program), and one
// bomb and one loop, that a transpiled program meets the same limits.
func typescriptCases(e environment) []hostileCase {
	return inLanguage(sandboxd.LanguageTypeScript, []hostileCase{
		{
			// esbuild refuses it on the host: no container is taken.
			name: "syntax-error",
			code: "let x: number = 1\nlet y z\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{1}, stderrHas: `Expected ";" but found "z"`},
		},
		{
			name: "typed-program",
			code: "interface P { n: number }\nenum E { A = 20 }\nconst p: P = { n: E.A + 22 }\nconsole.log(p.n as number)\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"42\n"}},
		},
		{name: "infinite-loop", code: "let n: number = 0\nfor (;;) { n++ }\n", killed: true,
			want: answer{status: statuses(sandboxd.StatusTimeout), exit: []int{137}}},
		{
			name: "memory-bomb-growing", code: "const a: number[][] = []\nfor (;;) a.push(new Array<number>(1e5).fill(1.5))\n", slow: true,
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{134, 139}, stderrHas: "heap out of memory", check: cpuUnder(jsHeapBombCPU)},
		},
	})
}

// stderrFlood checks a flood on stderr: stdout empty, stderr nothing but
// the flood, cut at the cap (less the start stamp taken off it).
func stderrFlood(res sandboxd.Result) []string {
	var d []string
	if res.Stdout != "" {
		d = append(d, fmt.Sprintf("stdout %q, want none", clip(res.Stdout)))
	}
	if strings.Trim(res.Stderr, "x\n") != "" {
		d = append(d, "the kept stderr holds something else than the flood")
	}
	if len(res.Stderr) > capBytes || len(res.Stderr) < capBytes-100 {
		d = append(d, fmt.Sprintf("stderr is %d bytes, want the cap of %d (less the stamp)", len(res.Stderr), capBytes))
	}
	return d
}

// memClosedNoEnv checks read-token under gVisor: PID 1's memory is not
// opened, and no SANDBOX_ variable reached the program.
func memClosedNoEnv(res sandboxd.Result) []string {
	var d []string
	if strings.Contains(res.Stdout, "/proc/1/mem opened") {
		d = append(d, "the program opened PID 1's memory")
	}
	if !strings.Contains(res.Stdout, "env \n") {
		d = append(d, fmt.Sprintf("SANDBOX_ variables in the program's environment: %q", res.Stdout))
	}
	return d
}
