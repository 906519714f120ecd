package supervisor

import (
	"crypto/sha256"
	"io"
	"strings"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// outFile is one record of the files out: a file sent with its content
// (fd open on it, at most size bytes sent) or listed by name and size.
type outFile struct {
	kind byte
	name string
	size int64
	fd   int
}

// section is the files out of a call, planned before the marker that
// announces its length.
type section struct {
	files []outFile
	cut   bool
	len   int64
}

// collect plans the files section: the regular files under root that are
// new or whose content differs from the file written in (and, with before,
// a session's snapshot, that changed since), in name order; the first that
// fit the caps carry their content, at most runnerproto.ListExtra more are
// listed. Each file sent is opened without following a link and without
// blocking, and kept only when fstat says it is a regular file; its size
// then is the size its record announces.
func collect(root string, written map[string]inFile, before map[string]signature, maxFiles, maxBytes int64) *section {
	found, cut := walk(root)
	sec := &section{cut: cut}
	var kept, listed, used int64
	for _, e := range found {
		if unchanged(root, e, written) {
			continue
		}
		if _, in := written[e.name]; !in && before != nil && before[e.name] == e.sig {
			continue
		}
		if kept+listed >= maxFiles+runnerproto.ListExtra {
			sec.cut = true
			break
		}
		f := outFile{kind: runnerproto.KindListed, name: e.name, size: e.sig.size, fd: -1}
		if kept < maxFiles && e.sig.size <= maxBytes-used {
			fd, size, ok := openRegular(root, e.name)
			if !ok {
				continue // no longer a regular file
			}
			f.size = size
			if size <= maxBytes-used {
				f.kind, f.fd = runnerproto.KindContent, fd
			} else {
				unix.Close(fd)
			}
		}
		if f.kind == runnerproto.KindContent {
			kept++
			used += f.size
		} else {
			listed++
			sec.cut = true
		}
		sec.files = append(sec.files, f)
		sec.len += int64(len(runnerproto.AppendRecord(nil, f.kind, f.name, f.size)))
		if f.kind == runnerproto.KindContent {
			sec.len += f.size
		}
	}
	return sec
}

// openRegular opens name under root, each part without following a link,
// the file without blocking, and returns it with its size when fstat says
// it is a regular file.
func openRegular(root, name string) (int, int64, bool) {
	dfd, err := unix.Open(root, dirFlags, 0)
	if err != nil {
		return -1, 0, false
	}
	parts := strings.Split(name, "/")
	for _, part := range parts[:len(parts)-1] {
		sub, err := unix.Openat(dfd, part, dirFlags, 0)
		unix.Close(dfd)
		if err != nil {
			return -1, 0, false
		}
		dfd = sub
	}
	fd, err := unix.Openat(dfd, parts[len(parts)-1], fileFlags, 0)
	unix.Close(dfd)
	if err != nil {
		return -1, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, false
	}
	return fd, st.Size, true
}

// unchanged reports whether e is a file in, still of its size and content.
func unchanged(root string, e entry, written map[string]inFile) bool {
	in, ok := written[e.name]
	if !ok || in.size != e.sig.size {
		return false
	}
	fd, size, ok := openRegular(root, e.name)
	if !ok {
		return false
	}
	defer unix.Close(fd)
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(fdReader(fd), in.size+1))
	return err == nil && size == in.size && n == in.size && [sha256.Size]byte(h.Sum(nil)) == in.sum
}

// fdReader reads a raw descriptor.
type fdReader int

// Read reads from the descriptor; io.EOF at its end.
func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// write writes the section's records to w, each file's content at the
// size its record announced: cut if it grew, padded with zeros if it
// shrank, so the stream never departs from the lengths already sent. It
// closes every file.
func (sec *section) write(w io.Writer) error {
	defer sec.close()
	var head []byte
	for i := range sec.files {
		f := &sec.files[i]
		head = runnerproto.AppendRecord(head[:0], f.kind, f.name, f.size)
		if _, err := w.Write(head); err != nil {
			return err
		}
		if f.kind != runnerproto.KindContent {
			continue
		}
		if err := streamFile(w, f.fd, f.size); err != nil {
			return err
		}
	}
	return nil
}

// streamFile writes exactly size bytes of the file fd to w: its first
// bytes, then zeros for what it no longer has (it shrank, or a read
// failed). Only the link's errors are returned.
func streamFile(w io.Writer, fd int, size int64) error {
	buf := make([]byte, min(size, chunk))
	for size > 0 {
		n, err := fdReader(fd).Read(buf[:min(size, int64(len(buf)))])
		if err != nil || n == 0 {
			break
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		size -= int64(n)
	}
	if size > 0 {
		if _, err := io.CopyN(w, zeros{}, size); err != nil {
			return err
		}
	}
	return nil
}

// close closes the files still open.
func (sec *section) close() {
	for i := range sec.files {
		if sec.files[i].fd >= 0 {
			unix.Close(sec.files[i].fd)
			sec.files[i].fd = -1
		}
	}
}

// zeros reads zeros without end.
type zeros struct{}

// Read fills p with zeros.
func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
