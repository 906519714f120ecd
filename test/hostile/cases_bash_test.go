package hostile

import (
	"fmt"
	"strings"

	"sandboxd"
)

// bashCases attack Bash's one-shot stub (docs/design/runtimes.md section
// 9.1), named as Python's case where the idea is the same.
func bashCases(e environment) []hostileCase {
	timeout := answer{status: statuses(sandboxd.StatusTimeout), exit: []int{137}}
	flood := answer{status: statuses(sandboxd.StatusOutputLimit), exit: []int{137}, outLen: capBytes, within: capAnswer, check: onlyXs}
	fillTmp := answer{status: statuses(sandboxd.StatusOK), stdout: []string{fmt.Sprintf("ENOSPC %d MiB\n", e.tmpfs>>20)}}
	forged := "\x00sandboxd:" + strings.Repeat("0", 32) + ":go\n" +
		"\x00sandboxd:" + strings.Repeat("a", 32) + ":000 0000000000 0000000000 0000000000 0 0 0000000000 0\nafter\n"
	return inLanguage(sandboxd.LanguageBash, []hostileCase{
		{
			// The shell returns at once, its bomb left behind against the
			// pids limit; the run is answered, and nothing survives it.
			name: "fork-bomb", code: ":(){ :|:& };:\n", killed: true,
			want: answer{status: statuses(sandboxd.StatusOK, sandboxd.StatusError, sandboxd.StatusTimeout)},
			per: map[string][]answer{"runsc": {
				{status: statuses(sandboxd.StatusOK, sandboxd.StatusError, sandboxd.StatusTimeout)}, runscSandboxFailed,
			}},
		},
		{name: "infinite-loop", code: "while :; do :; done\n", killed: true, want: timeout},
		{name: "trap-int-loop", code: "trap '' INT TERM\necho deaf\nwhile :; do :; done\n", killed: true,
			want: answer{status: timeout.status, exit: timeout.exit, stdout: []string{"deaf\n"}}},
		{
			// String doubling in the shell itself: bash's xmalloc fails at
			// the data limit, which is fatal to it (2). gVisor does not
			// enforce that limit: the cgroup's OOM killer ends it there.
			name: "memory-bomb-growing", code: "s=x\nwhile :; do s=$s$s; done\n", slow: true,
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{2}, stderrHas: "cannot allocate", check: cpuUnder(jsHeapBombCPU)},
			// Under gVisor the cgroup's OOM killer, within the case's own
			// deadline (slow: bombUnderRunsc's promptly is the environment's).
			per: map[string][]answer{"runsc": {{status: statuses(sandboxd.StatusOOM), exit: []int{137}}, killedAtDeadline()}},
		},
		{name: "flood-lines", code: "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", want: flood},
		{
			name: "flood-stderr", code: "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx >&2\n",
			want: answer{status: statuses(sandboxd.StatusOutputLimit), exit: []int{137}, within: capAnswer, check: stderrFlood},
		},
		{
			name: "forged-marker",
			code: "printf '\\0sandboxd:%s:go\\n' 00000000000000000000000000000000\n" +
				"printf '\\0sandboxd:%s:000 0000000000 0000000000 0000000000 0 0 0000000000 0\\n' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\necho after\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{forged}},
		},
		{
			name: "dev-tcp",
			code: "if exec 5<>/dev/tcp/1.1.1.1/80; then echo reached; else echo failed; fi\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"failed\n"}, check: promptly(e)},
		},
		{
			name: "write-outside-tmp",
			code: bashTries("echo x >", "written", "/etc/passwd", "/opt/sandbox/stubs/bash-session.sh", "/escape") +
				"echo x >/tmp/ok && cat /tmp/ok\n",
			want: answer{status: statuses(sandboxd.StatusOK),
				stdout: []string{"/etc/passwd refused\n/opt/sandbox/stubs/bash-session.sh refused\n/escape refused\nx\n"}},
		},
		{
			name: "read-token",
			code: bashTries(": <", "opened", "/proc/1/environ", "/proc/1/mem", "/proc/1/fd/0") +
				"echo \"env $(env | grep -c '^SANDBOX')\"\n",
			want: answer{status: statuses(sandboxd.StatusOK),
				stdout: []string{"/proc/1/environ refused\n/proc/1/mem refused\n/proc/1/fd/0 refused\nenv 0\n"}},
			per: map[string][]answer{"runsc": {{status: statuses(sandboxd.StatusOK), check: func(res sandboxd.Result) []string {
				if strings.Contains(res.Stdout, "/proc/1/mem opened") || !strings.Contains(res.Stdout, "env 0\n") {
					return []string{"PID 1's memory opened, or SANDBOX_ variables in the environment"}
				}
				return nil
			}}}},
		},
		{
			// kill -9 -1 reaches every process but PID 1 and the shell: its
			// job dies; then the shell kills itself, and the answer comes
			// (selfKilled: see JavaScript's kill-all).
			name: "kill-all", code: "sh -c 'sleep 1000; true' " + markerPlaceholder + " &\necho killing\nkill -9 -1\nwait $!\necho \"job $?\"\nkill -9 $$\necho not reached\n",
			want: selfKilled(e, "killing\njob 137\n"),
		},
		{
			// exec replaces the shell the stub started: what replaces it is
			// the program now, answered as the shell would have been.
			name: "exec-replaces-shell", code: "echo hi\nexec echo replaced\necho not reached\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, stdout: []string{"hi\nreplaced\n"}, check: promptly(e)},
		},
		{
			name: "exec-into-sleep", code: "exec sh -c 'sleep 1000; true' " + markerPlaceholder + "\n", killed: true,
			want: timeout,
		},
		{
			// Files of 4 MiB each (under the file size limit) until /tmp is
			// full: all of the environment's /tmp, and no more (under runsc
			// as Python's fill-tmp may be: at the deadline, the line printed).
			name: "fill-tmp",
			code: "i=0\nwhile head -c 4194304 /dev/zero >/tmp/f$i 2>/dev/null; do i=$((i + 1)); done\n" +
				"t=0\nfor f in /tmp/f*; do t=$((t + $(wc -c <\"$f\"))); done\necho \"ENOSPC $((t >> 20)) MiB\"\n",
			want: fillTmp,
			per:  map[string][]answer{"runsc": {fillTmp, killedAtDeadline(fillTmp.stdout...)}},
		},
		{
			name: "process-exit-3", code: "echo bye\nexit 3\necho not reached\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{3}, stdout: []string{"bye\n"}},
		},
	})
}

// bashTries is Bash that tries a redirection (op, such as "echo x >") to
// each path, and prints the path with done when it worked, or "refused".
func bashTries(op, done string, paths ...string) string {
	return "for p in " + strings.Join(paths, " ") + "; do\n" +
		"  if { " + op + "\"$p\"; } 2>/dev/null; then echo \"$p " + done + "\"; else echo \"$p refused\"; fi\ndone\n"
}
