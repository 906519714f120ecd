package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// The answers of ordinary programs, through the real daemon and image.

func TestRunHelloWorld(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, `print("hello, world")`)
		check(t, res, want{stdout: "hello, world\n", status: sandboxd.StatusOK})
		// Positive, and short of the deadline: how short is the host's load.
		if res.Duration <= 0 || res.Duration >= d.cfg.Timeout {
			t.Errorf("Duration = %s, want a positive time short of the %s deadline", res.Duration, d.cfg.Timeout)
		}
		assertGone(t, d, jobID(t))
	})
}

// TestRunLanguageNotInImage runs a program in a language the python image
// does not run: the header carries it, and the runner answers the
// program's own error, exit status 1 with a line that names it, not ours.
func TestRunLanguageNotInImage(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguageJavaScript, Code: `console.log(1)`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	check(t, res, want{stderr: "sandbox-run: this sandbox runs python only; it cannot run javascript\n", exit: 1,
		status: sandboxd.StatusError})
	if _, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Language: "js", Code: "1"}); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Errorf("Run with an alias = %v, want CodeInvalid", err)
	}
}

func TestRunStderrApart(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "import sys\nprint('out 1')\nprint('err 1', file=sys.stderr)\nprint('out 2')\nsys.stderr.write('err 2\\n')\n")
		check(t, res, want{stdout: "out 1\nout 2\n", stderr: "err 1\nerr 2\n", status: sandboxd.StatusOK})
	})
}

func TestRunExitCode(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "import sys\nprint('bye')\nsys.exit(3)\n")
		check(t, res, want{stdout: "bye\n", exit: 3, status: sandboxd.StatusError})
	})
}

func TestRunUncaughtException(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "x = 1\ndef f():\n    raise ValueError('boom')\nf()\n")
		check(t, res, want{
			stderr: "Traceback (most recent call last):\n" +
				"  File \"main.py\", line 4, in <module>\n" +
				"    f()\n" +
				"  File \"main.py\", line 3, in f\n" +
				"    raise ValueError('boom')\n" +
				"ValueError: boom\n",
			exit:   1,
			status: sandboxd.StatusError,
		})
	})
}

func TestRunUnicode(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "print('h\u00e9llo \u4e16\u754c \U0001f40d')\nimport sys\nprint('\u00fc', file=sys.stderr)\n")
		check(t, res, want{stdout: "h\u00e9llo \u4e16\u754c \U0001f40d\n", stderr: "\u00fc\n", status: sandboxd.StatusOK})
	})
}

func TestRunInvalidUTF8(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "import sys\nsys.stdout.buffer.write(b'a\\xffb\\xc3\\n')\nsys.stderr.buffer.write(b'\\xfe\\n')\n")
		check(t, res, want{stdout: "a\ufffdb\ufffd\n", stderr: "\ufffd\n", status: sandboxd.StatusOK})
	})
}

func TestRunStdinIsEOF(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		code := "import sys\nprint(repr(sys.stdin.read()))\ntry:\n    input()\nexcept EOFError:\n    print('EOF')\n"
		res := mustRun(t, d, code)
		check(t, res, want{stdout: "''\nEOF\n", status: sandboxd.StatusOK})
		if res.Duration >= d.cfg.Timeout {
			t.Errorf("Duration = %s: reading stdin hung", res.Duration)
		}
	})
}

func TestRunLargeProgram(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// 64 KiB of code: more than a pipe holds, so the hand-over must not
		// wait for the program before it reads.
		code := strings.Repeat("x = 1\n", 64<<10/6) + "print('done')\n"
		res := mustRun(t, d, code)
		check(t, res, want{stdout: "done\n", status: sandboxd.StatusOK})
	})
}
