package hostile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"sandboxd"
	"sandboxd/internal/runnerproto"
	"sandboxd/internal/testenv"
	"sandboxd/runtime"
)

// filesProtocol is the first runner protocol with files in and out; the
// image carries its protocol in the label runnerproto.LabelRunner.
const filesProtocol = 4

// The caps on files in and out: config.yaml's runtime.max_files and
// runtime.max_files_bytes.
const (
	maxFiles      = 16
	maxFilesBytes = 8 << 20
)

// TestHostileFilesOut runs the programs that attack the files out (and the
// files in) in both environments, under runc with the pool, and in python
// under runsc too: each must end in its answer, with files out that keep to
// the contract (filesWithin) and the caps, and leave nothing behind.
func TestHostileFilesOut(t *testing.T) {
	vs := []variant{
		{env: pythonEnv, oci: "runc", pool: 2, suite: "files", timed: true},
		{env: pythonEnv, oci: "runsc", pool: 2, suite: "files", timed: true},
		{env: dataEnv, oci: "runc", pool: 2, suite: "files", timed: true},
	}
	for _, v := range vs {
		requireFilesOut(t, v.env.image)
	}
	runMatrix(t, vs, filesCases)
}

// requireFilesOut skips the test while the image speaks a runner protocol
// older than filesProtocol, or fails it under CI=true, saying so; outside
// integration runs it skips before anything reaches Docker.
func requireFilesOut(tb testing.TB, image string) {
	tb.Helper()
	testenv.RequireIntegration(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		tb.Fatal(err)
	}
	defer cli.Close()
	img, err := cli.ImageInspect(ctx, image)
	if err != nil {
		tb.Fatalf("inspecting %s: %v", image, err)
	}
	label := ""
	if img.Config != nil {
		label = img.Config.Labels[runnerproto.LabelRunner]
	}
	if n, err := strconv.Atoi(label); err != nil || n < filesProtocol {
		testenv.SkipOrFailInCI(tb, fmt.Sprintf("%s speaks runner protocol %q (label %s): files in and out need %d "+
			"(branch files; `make image image-data` rebuilds the images)", image, label, runnerproto.LabelRunner, filesProtocol))
	}
}

// filesCases attack the files out: too large, too many, too deep, links,
// special files, names no answer may carry, files in swapped for links,
// and a file still growing while it is read.
func filesCases(environment) []hostileCase {
	return []hostileCase{
		{
			// Over the bytes cap: listed by name and size, without
			// content; the small one after it still fits.
			name: "files-huge-and-sparse",
			code: "import os\nwith open('huge.bin', 'wb') as f:\n    f.write(b'x' * (12 << 20))\n" +
				"with open('sparse.bin', 'wb') as f:\n    f.truncate(15 << 20)\nopen('small.txt', 'w').write('ok')\n",
			want: filesAnswer(files(listed("huge.bin", 12<<20), kept("small.txt", "ok"), listed("sparse.bin", 15<<20)), true),
		},
		{
			// Over the count cap: the first max_files by name carry their
			// content, some more are listed, the rest left out.
			name: "files-numerous",
			code: "for i in range(300):\n    open(f'n{i:03d}', 'w').write(str(i))\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: firstKept(maxFiles, "n%03d", "%d")},
		},
		{
			// Deeper than the walk goes: the top file is there, the
			// answer comes.
			name: "files-deep-tree",
			code: "import os\nopen('top.txt', 'w').write('top')\nos.makedirs('/'.join(['d'] * 100))\n" +
				"open('/'.join(['d'] * 100) + '/bottom.txt', 'w').write('bottom')\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: holds(kept("top.txt", "top"))},
		},
		{
			// Links to the system's files, to a directory, to /proc, to
			// nothing, and to a file of its own: never followed.
			name: "files-symlinks",
			code: "import os\nopen('real.txt', 'w').write('real')\n" +
				"for name, target in [('passwd', '/etc/passwd'), ('environ', '/proc/self/environ'), ('etc', '/etc'),\n" +
				"                     ('root', '/'), ('dangling', '/nonexistent'), ('again.txt', 'real.txt'), ('loop', 'loop')]:\n" +
				"    os.symlink(target, name)\nos.makedirs('sub')\nos.symlink('/etc/shadow', 'sub/shadow')\n",
			want: filesAnswer(files(kept("real.txt", "real")), false),
		},
		{
			// A FIFO no one writes to (reading it would block for ever),
			// a listening socket, and a device node, which needs a
			// capability the sandbox has not.
			name: "files-special",
			code: "import errno, os, socket, stat\nos.mkfifo('fifo')\ns = socket.socket(socket.AF_UNIX)\ns.bind('sock')\ns.listen()\n" +
				"try:\n    os.mknod('null', stat.S_IFCHR | 0o666, os.makedev(1, 3))\n    print('mknod ok')\n" +
				"except OSError as e:\n    print('mknod', errno.errorcode[e.errno])\nopen('ok.txt', 'w').write('ok')\n",
			want: filesAnswer(files(kept("ok.txt", "ok")), false, "mknod EPERM\n"),
			// gVisor makes the node in its own tmpfs (no host device
			// behind it); the files out never read it.
			per: map[string][]answer{"runsc": {filesAnswer(files(kept("ok.txt", "ok")), false, "mknod ok\n")}},
		},
		{
			// Names the answer may not carry (a newline, a control
			// character, a backslash, bytes that are not UTF-8) are
			// never returned; the good ones, the longest part included, are.
			name: "files-bad-names-out",
			code: "import os\nfor name in [b'new\\nline', b'bell\\x07', b'back\\\\slash', b'\\xff\\xfe.bin', b'del\\x7f', b'x' * 251 + b'.txt', b'plain.txt']:\n" +
				"    with open(name, 'wb') as f:\n        f.write(b'n')\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0},
				check: holdsOnly(kept("plain.txt", "n"), kept(strings.Repeat("x", 251)+".txt", "n"))},
		},
		{
			// Files in: one left as it came (not returned), one changed
			// (returned), one swapped for a link to /etc/passwd (never
			// followed), one swapped for a directory.
			name: "files-in-swapped",
			files: []sandboxd.File{{Name: "keep.csv", Content: []byte("a\n1\n")}, {Name: "change.csv", Content: []byte("a\n1\n")},
				{Name: "link.csv", Content: []byte("a\n1\n")}, {Name: "dir/x.csv", Content: []byte("a\n1\n")}},
			code: "import os\nassert open('keep.csv').read() == 'a\\n1\\n'\nopen('change.csv', 'a').write('2\\n')\n" +
				"os.remove('link.csv')\nos.symlink('/etc/passwd', 'link.csv')\nos.remove('dir/x.csv')\nos.mkdir('dir/x.csv')\n",
			want: filesAnswer(files(kept("change.csv", "a\n1\n2\n")), false),
		},
		{
			// A child goes on appending to a file, up to past the bytes
			// cap, while the runner reads the files out: the read is
			// bounded, whatever size it finds.
			name: "files-growing-while-read",
			code: "import os, time\nopen('done.txt', 'w').write('done')\nif os.fork() == 0:\n" +
				"    with open('grow.log', 'ab', buffering=0) as f:\n        for _ in range(160):\n" +
				"            f.write(b'g' * 65536)\n            time.sleep(0.005)\n    os._exit(0)\ntime.sleep(0.3)\n",
			want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: holds(kept("done.txt", "done"))},
			per:  orRunscFailed(answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: holds(kept("done.txt", "done"))}),
		},
	}
}

// TestHostileFilesInNames hands the runner, past the API's validation,
// files in whose names try to leave the working directory or break the
// runner's protocol: each run is refused as invalid, and no container is
// left. Names that are each valid but clash (a duplicate, a file that is
// also another's directory) may be refused too, or delivered as the
// program's answer, never a failure of the service.
func TestHostileFilesInNames(t *testing.T) {
	v := variant{env: pythonEnv, oci: "runc", pool: 2, suite: "filesin"}
	requireFilesOut(t, v.env.image)
	d := mustRunner(t, v, v.env.timeout)
	run := func(i int, names ...string) (sandboxd.Result, error) {
		job := sandboxd.Job{ID: fmt.Sprintf("%s-%d", v.instance(), i), Language: sandboxd.LanguagePython,
			Code: "import os\nprint(sorted(os.listdir('.')))\n"}
		for _, n := range names {
			job.Files = append(job.Files, sandboxd.File{Name: n, Content: []byte("x"), Size: 1})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return d.Run(ctx, job)
	}
	bad := []string{"../escape.txt", "/tmp/abs.txt", "a/../../b.txt", "a/./b.txt", "./a.txt", "a//b.txt", "dir/",
		"", "nul\x00.txt", "new\nline", "back\\slash", "\xff\xfe.txt", strings.Repeat("x", 256), strings.Repeat("d/", 513) + "f"}
	for i, name := range bad {
		if _, err := run(i, "ok.txt", name); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
			t.Errorf("file in %q: error %v (code %s), want it refused as invalid", clip(name), err, sandboxd.ErrorCode(err))
		}
	}
	for i, names := range [][]string{{"a.txt", "a.txt"}, {"a", "a/b"}, {"a/b", "a"}} {
		res, err := run(len(bad)+i, names...)
		if err != nil && sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
			t.Errorf("files in %q: error %v, want an answer or a refusal as invalid", names, err)
		}
		t.Logf("files in %q: status %q stdout %q stderr %q err %v", names, res.Status, res.Stdout, clip(res.Stderr), err)
	}
	settle(t, d)
	for i := range len(bad) + 3 {
		assertNoContainer(t, runtime.LabelJob, fmt.Sprintf("%s-%d", v.instance(), i))
	}
}
