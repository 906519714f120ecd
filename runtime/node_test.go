package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/testenv"
)

// The node image (`images/build.sh IMAGE node`): the supervisor and the
// JavaScript stub under the service's own container spec, with node's
// configured limits (256 MiB, so a 192 MiB data limit and a 132 MiB heap).

// nodeConfig points a runner at the node image.
func nodeConfig(c *Config) {
	c.Image = testenv.NodeImage()
	c.MemoryBytes = 256 << 20
	c.Languages = []string{sandboxd.LanguageJavaScript, sandboxd.LanguageTypeScript}
}

// runLang runs code in lang and fails the test on an error.
func runLang(tb testing.TB, d *Docker, lang, code, stdin string, files ...sandboxd.File) sandboxd.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID(tb), Language: lang, Code: code, Stdin: stdin, Files: files})
	if err != nil {
		tb.Fatalf("Run(%.40q): %v", code, err)
	}
	return res
}

func TestNodeRuns(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, nodeConfig, mode)
		res := runLang(t, d, sandboxd.LanguageJavaScript, "console.log('hello', process.version.split('.')[0])", "")
		check(t, res, want{stdout: "hello v24\n", status: sandboxd.StatusOK})
		if res.Usage == nil || res.Usage.MaxRSSKB <= 0 {
			t.Errorf("usage %+v", res.Usage)
		}
		check(t, runLang(t, d, sandboxd.LanguageJavaScript,
			"const s = require('fs').readFileSync(0, 'utf8')\nconsole.error('err')\nprocess.exit(s.length)", "abc"),
			want{stderr: "err\n", exit: 3, status: sandboxd.StatusError})
		res = runLang(t, d, sandboxd.LanguageJavaScript, "const fs = require('fs')\n"+
			"fs.writeFileSync('out.txt', fs.readFileSync('in.txt', 'utf8').toUpperCase())\nnull.x\n", "",
			sandboxd.File{Name: "in.txt", Content: []byte("made")})
		if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "    at main.js:3:6") ||
			strings.Contains(res.Stderr, "/opt/sandbox") || len(res.Files) != 1 || string(res.Files[0].Content) != "MADE" {
			t.Errorf("files and a thrown error: %+v", res)
		}
		check(t, runLang(t, d, sandboxd.LanguageTypeScript,
			"import { join } from 'node:path'\nconst n: number = await Promise.resolve(2)\nconsole.log(join('a', String(n)))\n", ""),
			want{stdout: "a/2\n", status: sandboxd.StatusOK})
		res = runLang(t, d, sandboxd.LanguageTypeScript, "type T = { a: number }\nconst t: T = { a: 1 }\nif (t.a) {\n"+
			"  throw new Error('typed')\n}\n", "")
		if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "main.ts:4:9") {
			t.Errorf("a TypeScript frame: %+v", res)
		}
		res = runLang(t, d, sandboxd.LanguageJavaScript, "new (require('worker_threads').Worker)('1')", "")
		if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "worker_threads are not available") {
			t.Errorf("a worker: %+v", res)
		}
	})
}

// TestNodeMemoryBombs: each bomb ends as a memory failure (V8's heap limit,
// a RangeError, the data limit), never at the deadline, within a few
// seconds of CPU: the wall clock is the host's load's (a deadline of 30 s
// leaves room for it).
func TestNodeMemoryBombs(t *testing.T) {
	d := mustDocker(t, nodeConfig, func(c *Config) { c.Timeout = 30 * time.Second })
	for _, code := range []string{
		"const a = []\nfor (;;) a.push(new Array(1e5).fill(1.5))",
		"const a = []\nfor (;;) a.push({ n: a.length })",
		"let s = 'x'\nfor (;;) s += s",
		"Buffer.alloc(1 << 30, 1)",
		"const a = []\nfor (;;) a.push(Buffer.alloc(1 << 20, 1))",
	} {
		start := time.Now()
		res := runLang(t, d, sandboxd.LanguageJavaScript, code, "")
		cpu := time.Duration(-1)
		if res.Usage != nil {
			cpu = res.Usage.CPU
		}
		if res.Status != sandboxd.StatusError && res.Status != sandboxd.StatusOOM || cpu > 5*time.Second {
			t.Errorf("%q: %s (exit %d) in %v, %v of CPU; stderr %.300q", code, res.Status, res.ExitCode,
				time.Since(start), cpu, res.Stderr)
		}
		t.Logf("%.40q: %s (exit %d) in %v, %v of CPU", code, res.Status, res.ExitCode, time.Since(start), cpu)
	}
}

// callLang runs code in the session and fails the test on an error.
func callLang(tb testing.TB, s *Session, code, stdin string) sandboxd.SessionResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, sandboxd.Job{ID: jobID(tb), Code: code, Stdin: stdin})
	if err != nil {
		tb.Fatalf("Run(%.40q): %v", code, err)
	}
	return res
}

func TestNodeSession(t *testing.T) {
	d := mustDocker(t, nodeConfig, func(c *Config) { c.Timeout = 2 * time.Second })
	s := mustSessionOf(t, d, sandboxd.LanguageJavaScript)
	ok := want{status: sandboxd.StatusOK}
	checkCall(t, callLang(t, s, "let x = 1\nimport os from 'node:os'\nfunction f(a) { return a * 10 }", ""), ok, "<none>")
	checkCall(t, callLang(t, s, "x += 1\nawait Promise.resolve(f(x))", ""), ok, "20")
	checkCall(t, callLang(t, s, "require('fs').readFileSync(0, 'utf8') + typeof os.cpus", "in "), ok, "'in function'")
	checkCall(t, callLang(t, s, "process.exit(4)", ""), want{exit: 4, status: sandboxd.StatusError}, "<none>")
	res := callLang(t, s, "console.log('spinning')\nwhile (true) {}", "")
	if !res.TimedOut || res.Ended || !strings.Contains(res.Stdout, "spinning") {
		t.Fatalf("an interrupted loop: %+v", res)
	}
	checkCall(t, callLang(t, s, "[x, f(x)]", ""), ok, "[ 2, 20 ]")
	assertLive(t, s)

	ts := mustSessionOf(t, d, sandboxd.LanguageTypeScript)
	checkCall(t, callLang(t, ts, "const n: number = 21\ninterface P { v: number }", ""), ok, "<none>")
	checkCall(t, callLang(t, ts, "const p: P = { v: n * 2 }\np.v", ""), ok, "42")
	res = callLang(t, ts, "const q: = 1", "")
	if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "main.ts:1:") || res.Ended {
		t.Errorf("a syntax error: %+v", res)
	}
	checkCall(t, callLang(t, ts, "n", ""), ok, "21")
}
