package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// mustFile writes a file under root, its parents made.
func mustFile(t *testing.T, root, name, content string) {
	t.Helper()
	path := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWalkFollowsNothingAndKeepsItsBounds(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mustFile(t, outside, "secret", "s")
	mustFile(t, root, "a/b.txt", "b")
	os.Symlink(outside, filepath.Join(root, "linkdir"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link"))
	syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
	deep := strings.Repeat("d/", runnerproto.MaxDepth+1)
	mustFile(t, root, deep+"deep.txt", "x")
	found, cut := walk(root)
	var names []string
	for _, e := range found {
		names = append(names, e.name)
	}
	if strings.Join(names, ",") != "a/b.txt" || !cut {
		t.Errorf("found %v, cut %v", names, cut)
	}
}

func TestWalkCutsANameItCannotReturn(t *testing.T) {
	root := t.TempDir()
	mustFile(t, root, "bad\\name", "x")
	mustFile(t, root, "ok", "x")
	found, cut := walk(root)
	if len(found) != 1 || found[0].name != "ok" || !cut {
		t.Errorf("found %v, cut %v", found, cut)
	}
}

func TestWriteFilesRefusesWhatTheHostShouldHave(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"../x", "/etc/x", "a/../../x", "a//b", "", "x\n"} {
		_, err := writeFiles(root, []runnerproto.Record{{Name: name, Content: []byte("x")}}, false)
		if err == nil {
			t.Errorf("%q written", name)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "x")); err == nil {
		t.Error("a file written outside the root")
	}
	// A one-shot never overwrites; a session replaces, not following.
	mustFile(t, root, "f", "old")
	if _, err := writeFiles(root, []runnerproto.Record{{Name: "f", Content: []byte("new")}}, false); err == nil {
		t.Error("a one-shot overwrote a file")
	}
}

func TestStreamFilePadsAndCuts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		size int64
		want string
	}{{3, "abc"}, {5, "abc\x00\x00"}, {2, "ab"}, {0, ""}} {
		fd, err := unix.Open(path, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := streamFile(&b, fd, tt.size); err != nil || b.String() != tt.want {
			t.Errorf("size %d: %q, %v", tt.size, b.String(), err)
		}
		unix.Close(fd)
	}
}

func TestCollectSessionSkipsWhatDidNotChange(t *testing.T) {
	root := t.TempDir()
	mustFile(t, root, "old", "1")
	before := snapshot(root, nil)
	mustFile(t, root, "new", "2")
	mustFile(t, root, "old", "3") // the same size, changed at once
	sec := collect(root, nil, before, 10, 100)
	defer sec.close()
	var names []string
	for _, f := range sec.files {
		names = append(names, f.name)
	}
	if strings.Join(names, ",") != "new,old" {
		t.Errorf("files out %v", names)
	}
}
