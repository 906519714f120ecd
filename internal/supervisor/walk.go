package supervisor

import (
	"os"
	"sort"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// signature is what a session's snapshot keeps of a file: a file the call
// changed, even to the same size, gets another one (settle).
type signature struct {
	ino   uint64
	size  int64
	mtime int64
}

// entry is a regular file found under the root.
type entry struct {
	name string
	sig  signature
}

// walk returns the regular files under root in name order, and whether the
// walk was cut short by its bounds (runnerproto.MaxEntries,
// runnerproto.MaxDepth) or skipped a name it cannot return. It follows no
// link.
func walk(root string) ([]entry, bool) {
	fd, err := unix.Open(root, dirFlags, 0)
	if err != nil {
		return nil, true
	}
	w := &walker{}
	w.scan(fd, "", 1)
	sort.Slice(w.found, func(i, j int) bool { return w.found[i].name < w.found[j].name })
	return w.found, w.cut
}

// walker is one walk's state.
type walker struct {
	found   []entry
	visited int
	cut     bool
}

// scan visits the directory fd (and closes it), its names under prefix,
// at depth levels from the root.
func (w *walker) scan(fd int, prefix string, depth int) {
	dir := os.NewFile(uintptr(fd), prefix)
	defer dir.Close()
	for {
		batch, err := dir.ReadDir(256)
		for _, d := range batch {
			if w.visited >= runnerproto.MaxEntries {
				w.cut = true
				return
			}
			w.visited++
			w.visit(fd, prefix, d.Name(), depth)
		}
		if err != nil || len(batch) == 0 {
			return
		}
	}
}

// visit looks at one name of the directory fd.
func (w *walker) visit(fd int, prefix, base string, depth int) {
	name := prefix + base
	if runnerproto.ValidName(name) != "" {
		w.cut = true
		return
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return // gone meanwhile
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if depth >= runnerproto.MaxDepth {
			w.cut = true
			return
		}
		sub, err := unix.Openat(fd, base, dirFlags, 0)
		if err != nil {
			w.cut = true
			return
		}
		w.scan(sub, name+"/", depth+1)
	case unix.S_IFREG:
		w.found = append(w.found, entry{name: name, sig: signature{
			ino: st.Ino, size: st.Size, mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec}})
	}
}
