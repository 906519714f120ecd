package runtime

import "testing"

func TestSmoke(t *testing.T) {
	d := mustDocker(t)
	for _, code := range []string{"print('hello, world')", "import sys\nprint('a')\nprint('b', file=sys.stderr)\nsys.exit(3)", "x = 1\nraise ValueError('boom')\n", "while True: print('x'*99)", "b'x' * (1 << 30)", "while True: pass"} {
		res := mustRun(t, d, code)
		if len(res.Stdout) > 200 { res.Stdout = res.Stdout[:200] }
		t.Logf("%q -> %+v", code, res)
	}
}
