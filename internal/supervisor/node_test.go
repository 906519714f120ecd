package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/runnerproto"
	"sandboxd/internal/typescript"
)

// The JavaScript stub (images/node/stub.js), run by the host's node under
// the supervisor as the images run it; skipped where the host has none.

// nodeModules returns a NODE_PATH holding acorn and acorn-walk: the
// images' are Debian's (on node's own path); a host without them gets the
// copies its node carries inside.
func nodeModules(t *testing.T) string {
	t.Helper()
	if exec.Command("/usr/bin/node", "-e", "require('acorn'); require('acorn-walk')").Run() == nil {
		return ""
	}
	dir := t.TempDir()
	script := `const fs = require('fs'), path = require('path'), n = process.binding('natives');
for (const [m, d] of [['acorn/dist/acorn', 'acorn'], ['acorn-walk/dist/walk', 'acorn-walk']]) {
  const src = n['internal/deps/acorn/' + m];
  if (!src) process.exit(3);
  fs.mkdirSync(path.join(process.argv[1], d));
  fs.writeFileSync(path.join(process.argv[1], d, 'index.js'), src);
}`
	if out, err := exec.Command("/usr/bin/node", "-e", script, dir).CombinedOutput(); err != nil {
		t.Skipf("no acorn for the host's node: %v %s", err, out)
	}
	return dir
}

// mustNode starts a supervisor whose javascript and typescript stubs are
// the source tree's, with a data limit of data bytes (0: none).
func mustNode(t *testing.T, data int64) *host {
	t.Helper()
	st := mustNodeStub(t)
	return mustHostWith(t, func(s *Supervisor) {
		s.Stubs["javascript"], s.Stubs["typescript"] = st, st
		s.Limits.Data = data
	}, "javascript", "typescript")
}

// mustNodeStub returns the source tree's JavaScript stub, run by the
// host's node.
func mustNodeStub(t *testing.T) Stub {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no /usr/bin/node here")
	}
	path, err := filepath.Abs("../../images/node/stub.js")
	if err != nil {
		t.Fatal(err)
	}
	st := nodeStub(path)
	if dir := nodeModules(t); dir != "" {
		st.Env = append(st.Env, "NODE_PATH="+dir)
	}
	return st
}

// runNode runs one program on the JavaScript stub and returns its answer,
// its stderr before the marker and the supervisor's exit status.
func runNode(t *testing.T, h *host, lang, code, stdin string) (answer, string, int) {
	t.Helper()
	h.send(program{token: token(0), lang: lang, code: code, stdin: stdin})
	status := h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok {
		t.Fatalf("no answer (exit %d): %q, stderr %q", status, h.out.bytes(), h.errs.bytes())
	}
	errs := string(h.errs.bytes())
	if i := strings.Index(errs, runnerproto.Magic); i >= 0 {
		errs = errs[:i]
	}
	return a, errs, status
}

// inOrder reports whether s holds each of want, one after the other.
func inOrder(s string, want []string) bool {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

func TestNodeOneShot(t *testing.T) {
	cases := []struct {
		name, code, stdin, out string
		status                 int
		// errs are what stderr holds, in order.
		errs []string
	}{
		{name: "hello", code: "console.log('hello, world')\n", out: "hello, world\n"},
		{name: "main", code: "console.log(__filename.endsWith('/main.js'), typeof require, process.argv[1] === __filename)\n" +
			"if (require.main === module) console.log('main')", out: "true function true\nmain\n"},
		{name: "stdin", code: "const s = require('fs').readFileSync(0, 'utf8'); console.log([...s].reverse().join(''))",
			stdin: "olleh", out: "hello\n"},
		{name: "process.stdin", code: "let s = ''; process.stdin.on('data', (d) => s += d)\n" +
			"process.stdin.on('end', () => console.log(s.toUpperCase()))", stdin: "streamed", out: "STREAMED\n"},
		{name: "no stdin", code: "console.log(JSON.stringify(require('fs').readFileSync(0, 'utf8')))", out: "\"\"\n"},
		{name: "exit", code: "console.log('bye')\nprocess.exit(3)\nconsole.log('never')", out: "bye\n", status: 3},
		{name: "exitCode", code: "process.exitCode = 4", status: 4},
		{name: "event loop and exit listeners", code: "process.on('exit', (c) => console.log('exit', c))\n" +
			"setTimeout(() => console.log('timer'), 50)\nconsole.log('main')", out: "main\ntimer\nexit 0\n"},
		{name: "thrown", code: "const a = 1\nfunction f() {\n  throw new Error('boom')\n}\nf()\n", status: 1,
			errs: []string{"main.js:3\n", "  throw new Error('boom')\n", "Error: boom\n", "    at f (main.js:3:9)\n",
				"    at main.js:5:1\n"}},
		{name: "rejected await", code: "await null\nawait Promise.reject(new Error('late'))\n", status: 1,
			errs: []string{"Error: late\n", "main.js:2:"}},
		{name: "unhandled rejection", code: "Promise.reject(new Error('nobody'))\n", status: 1,
			errs: []string{"Error: nobody\n", "    at main.js:1:16"}},
		{name: "thrown in a callback", code: "process.on('exit', () => console.log('exit'))\n" +
			"setTimeout(() => {\n  throw new TypeError('later')\n}, 1)", out: "exit\n", status: 1,
			errs: []string{"TypeError: later\n", "    at Timeout._onTimeout (main.js:3:9)"}},
		{name: "uncaughtException listener", code: "process.on('uncaughtException', (e) => console.log('caught', e.message))\n" +
			"throw new Error('x')", out: "caught x\n"},
		{name: "syntax", code: "let x = (\n", status: 1, errs: []string{"main.js:", "SyntaxError"}},
		{name: "await and imports", code: "import { join } from 'node:path'\nimport * as os from 'node:os'\n" +
			"const v = await Promise.resolve(join('a', 'b'))\nconsole.log(v, typeof os.cpus)", out: "a/b function\n"},
		{name: "worker_threads", code: "const { Worker } = require('worker_threads')\nnew Worker('1')\n", status: 1,
			errs: []string{"worker_threads are not available in this sandbox", "main.js:2"}},
		{name: "worker_threads import", code: "import { Worker } from 'node:worker_threads'\n" +
			"try { new Worker('1') } catch (e) { console.log(e.message) }", out: "worker_threads are not available in this sandbox\n"},
		{name: "output before exit", code: "process.stdout.write('x'.repeat(1 << 20))\nprocess.exit(0)",
			out: strings.Repeat("x", 1<<20)},
		{name: "signal", code: "process.kill(process.pid, 'SIGTERM')\nsetTimeout(() => {}, 5000)", status: 128 + 15},
		// As under `node main.js`: SIGINT kills, even in a loop (no break of vm's).
		{name: "SIGINT", code: "console.log('spin')\nprocess.kill(process.pid, 'SIGINT')\nfor (;;) {}", out: "spin\n",
			status: 128 + 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := mustNode(t, 0)
			a, errs, status := runNode(t, h, "javascript", c.code, c.stdin)
			if a.output != c.out || a.report.Status != c.status || status != c.status {
				t.Errorf("output %.200q (%d bytes) status %d exit %d, want %.200q %d; stderr %q", a.output, len(a.output), a.report.Status,
					status, c.out, c.status, errs)
			}
			if !inOrder(errs, c.errs) {
				t.Errorf("stderr %q lacks %q in order", errs, c.errs)
			}
			if c.errs == nil && errs != "" {
				t.Errorf("stderr %q", errs)
			}
			if strings.Contains(errs, "stub.js") || strings.Contains(errs, "node-rewrite.js") ||
				strings.Contains(errs, "node:vm") {
				t.Errorf("the stub's frames are in the trace: %q", errs)
			}
		})
	}
}

// TestNodeTypeScriptFrames: an uncaught error of a TypeScript program is
// shown at the TypeScript's lines, not those of the JavaScript esbuild made
// of it (three lines up here, the interface gone): the arrow above it (the
// line's number, its text and the caret under the throw) and its frames.
func TestNodeTypeScriptFrames(t *testing.T) {
	src := "interface P {\n  a: number\n}\nconst p: P = { a: 1 }\nfunction f(x: number): number {\n" +
		"  throw new Error(`at line ${6} of main.ts`)\n}\nf(p.a)\n"
	js, diags, ok := typescript.Transpile(src)
	if !ok {
		t.Fatal(diags)
	}
	h := mustNode(t, 0)
	a, errs, _ := runNode(t, h, "typescript", js, "")
	want := "main.ts:6\n  throw new Error(`at line ${6} of main.ts`)\n  ^\n\n" +
		"Error: at line 6 of main.ts\n    at f (main.ts:6:9)\n    at main.ts:8:1\n"
	if a.report.Status != 1 || errs != want {
		t.Errorf("status %d, stderr %q; want %q", a.report.Status, errs, want)
	}
}

func TestNodeMemoryBombIsAnError(t *testing.T) {
	// 256 MiB of memory: a data limit of 192 MiB, so a 132 MiB heap.
	h := mustNode(t, 192<<20)
	start := time.Now()
	a, errs, _ := runNode(t, h, "javascript", "const a = []\nfor (;;) a.push(new Array(1e5).fill(1.5))\n", "")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the bomb took %v", took)
	}
	if a.report.Status == 0 || !strings.Contains(errs, "heap") {
		t.Errorf("status %d, stderr %q", a.report.Status, errs)
	}
	if a.report.MaxRSSKB > 400<<10 {
		t.Errorf("peak %d KiB: the heap limit did not hold", a.report.MaxRSSKB)
	}
}

func TestNodeHeapFlag(t *testing.T) {
	for _, c := range []struct {
		data int64
		want string
	}{{0, ""}, {192 << 20, "--max-old-space-size=132"}, {384 << 20, "--max-old-space-size=276"},
		{20 << 20, "--max-old-space-size=16"}} {
		argv := strings.Join(nodeStub("stub.js").Argv(Limits{Data: c.data}, false), " ")
		if c.want == "" && strings.Contains(argv, "max-old-space") || !strings.Contains(argv, c.want) {
			t.Errorf("data %d: %s", c.data, argv)
		}
	}
}

// mustNodeSession opens a javascript session on the source tree's stub.
func mustNodeSession(t *testing.T) *host {
	t.Helper()
	h := mustNode(t, 0)
	hd := runnerproto.SessionHeader{Token: token(25), MaxValue: 200, Language: "javascript"}
	if _, err := h.in.Write(hd.Append(nil)); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNodeSession(t *testing.T) {
	h := mustNodeSession(t)
	calls := []struct {
		code, stdin, out, value string
		// valueRE, when set, is what the value must match instead.
		valueRE string
		status  int
	}{
		{code: "let x = 1\nconst k = 10\nfunction f(a) { return a * k }\nclass C { v() { return 7 } }", value: ""},
		{code: "x += 1; f(x)", value: "20"},
		{code: "import { join } from 'node:path'\nimport os from 'node:os'\nconst y = await Promise.resolve(41)\ny + 1",
			value: "42"},
		{code: "join('a', String(y)) + ' ' + typeof os.cpus + ' ' + new C().v()", value: "'a/41 function 7'"},
		{code: "({a: 1, b: [1, 2, {c: new Map([[1, 2]])}]})", value: "{ a: 1, b: [ 1, 2, { c: [Map] } ] }"},
		{code: "{a: 1}", value: "{ a: 1 }"},
		// Node 20's AsyncLocalStorage shows on a promise (its async ids);
		// Node 24's does not.
		{code: "Promise.resolve(5)", valueRE: `^Promise \{\s+5(,\s+\[Symbol|\s+\}$)`},
		{code: "await Promise.resolve(5)", value: "5"},
		{code: "require('fs').readFileSync(0, 'utf8').trim()", stdin: "first\n", value: "'first'"},
		{code: "require('fs').readFileSync(0, 'utf8').trim()", stdin: "second\n", value: "'second'"},
		// A call that closes its stdin leaves the next one its own.
		{code: "require('fs').closeSync(0)"},
		{code: "require('fs').readFileSync(0, 'utf8').trim()", stdin: "third\n", value: "'third'"},
		{code: "let x = 5", status: 1},
		{code: "console.log('out'); process.exit(5); console.log('never')", out: "out\n", status: 5},
		{code: "null.p", status: 1},
		{code: "await new Promise((r) => setTimeout(() => r('late'), 30))", value: "'late'"},
		{code: "x", value: "2"},
		{code: "new (require('worker_threads').Worker)('1')", status: 1},
		{code: "Promise.reject(new Error('r')); 1", value: "1", status: 1},
		{code: "'ok'", value: "'ok'"},
		// What a call leaves running (here not frozen between calls) is not
		// a later call's: its output and its errors go nowhere.
		{code: "setInterval(() => console.log('tick'), 2)\nsetTimeout(() => { throw new Error('stale') }, 20); 0",
			value: "0"},
		{code: "await new Promise((r) => setTimeout(() => { console.log('mine'); r() }, 50))\n'after'",
			out: "mine\n", value: "'after'"},
	}
	for i, c := range calls {
		a := h.call(i, program{lang: "javascript", code: c.code, stdin: c.stdin})
		valueOK := a.value == c.value
		if c.valueRE != "" {
			valueOK = regexp.MustCompile(c.valueRE).MatchString(a.value)
		}
		if a.output != c.out || !valueOK || a.report.Status != c.status {
			t.Errorf("call %d %q: output %q value %q status %d, want %q %q %d; stderr %q", i, c.code, a.output,
				a.value, a.report.Status, c.out, c.value, c.status, h.errs.bytes())
		}
	}
	errs := string(h.errs.bytes())
	if !strings.Contains(errs, "Identifier 'x' has already been declared") ||
		!strings.Contains(errs, "TypeError: Cannot read properties of null") ||
		!strings.Contains(errs, "worker_threads are not available") {
		t.Errorf("stderr %q", errs)
	}
	if strings.Contains(errs, "stub.js") || strings.Contains(errs, "node:vm") {
		t.Errorf("the stub's frames are in a trace: %q", errs)
	}
}

func TestNodeSessionInterrupt(t *testing.T) {
	h := mustNodeSession(t)
	h.call(0, program{lang: "javascript", code: "let n = 7"})
	for i, code := range []string{"console.log('looping')\nwhile (true) {}", "console.log('looping')\nawait new Promise(() => {})"} {
		tok := token(1 + 2*i)
		from := len(h.out.bytes())
		h.send(program{token: tok, lang: "javascript", code: code})
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(string(h.out.bytes()[from:]), "looping\n") && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		h.interrupt()
		a, ok := h.waitEnd(tok, from, true)
		if !ok || a.report.Status != 130 || !a.report.Interrupted {
			t.Fatalf("interrupted %q: %+v (%v), stderr %q", code, a, ok, h.errs.bytes())
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the interrupt took %v", took)
		}
		// The session lives on, its bindings kept.
		if a := h.call(2+2*i, program{lang: "javascript", code: "n * 6"}); a.value != "42" || a.report.Interrupted {
			t.Errorf("next call: %+v", a)
		}
	}
	want := []string{"Error: Script execution was interrupted by `SIGINT`\n",
		"Error: Script execution was interrupted by `SIGINT` while it awaited; the call is abandoned\n"}
	if errs := string(h.errs.bytes()); !inOrder(errs, want) || strings.Contains(errs, "ERR_SCRIPT") {
		t.Errorf("stderr %q", errs)
	}
}

func TestNodeLoadsFilesSentIn(t *testing.T) {
	h := mustNode(t, 0)
	h.send(program{token: token(0), lang: "javascript",
		code: "const { a } = require('./y.js')\nimport { b } from './x.mjs'\nconsole.log(a + b)\n",
		files: []runnerproto.Record{{Name: "y.js", Content: []byte("exports.a = 40")},
			{Name: "x.mjs", Content: []byte("export const b = 2")}}})
	h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok || a.output != "42\n" || a.report.Status != 0 {
		t.Errorf("answer %+v (%v), stderr %q", a, ok, h.errs.bytes())
	}
}

func TestNodeOneShotHandOverLeavesNoHandle(t *testing.T) {
	// The stub reads a one-shot's request with blocking reads: no socket
	// on 3 is left closing when the program starts (its close, and the
	// first run of a stream's code, were the program's wait), and 3 is
	// closed.
	h := mustNode(t, 0)
	code := "const names = process._getActiveHandles().map((h) => h.constructor.name)\n" +
		"let fd3 = 'open'\ntry { require('fs').fstatSync(3) } catch (e) { fd3 = e.code }\n" +
		"console.log(JSON.stringify(names), fd3)"
	a, errs, status := runNode(t, h, "javascript", code, "")
	if a.output != "[] EBADF\n" || status != 0 {
		t.Errorf("output %q, exit %d, stderr %q", a.output, status, errs)
	}
}
