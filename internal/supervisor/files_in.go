package supervisor

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// The flags every part of a name is opened with: nothing followed.
const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
	fileFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
)

// inFile is what the supervisor keeps of a file in: its size and digest,
// so that a file the program left as it came is not sent back.
type inFile struct {
	size int64
	sum  [sha256.Size]byte
}

// writeFiles writes each file in under root, its parents created, no link
// followed, nothing overwritten; with replace (a session's call) a file or
// link of that name is unlinked first, never followed. It returns what it
// wrote, and an error naming the file it could not write.
func writeFiles(root string, files []runnerproto.Record, replace bool) (map[string]inFile, error) {
	written := make(map[string]inFile, len(files))
	for _, f := range files {
		if why := runnerproto.ValidName(f.Name); why != "" {
			return written, fmt.Errorf("%q: %s", f.Name, why)
		}
		if err := writeFile(root, f.Name, f.Content, replace); err != nil {
			return written, fmt.Errorf("%s: %w", f.Name, err)
		}
		written[f.Name] = inFile{size: int64(len(f.Content)), sum: sha256.Sum256(f.Content)}
	}
	return written, nil
}

// writeFile writes one file in.
func writeFile(root, name string, content []byte, replace bool) error {
	parts := strings.Split(name, "/")
	dfd, err := unix.Open(root, dirFlags, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(dfd) }()
	for _, part := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(dfd, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		sub, err := unix.Openat(dfd, part, dirFlags, 0)
		if err != nil {
			return err
		}
		unix.Close(dfd)
		dfd = sub
	}
	last := parts[len(parts)-1]
	if replace {
		if err := unix.Unlinkat(dfd, last, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	fd, err := unix.Openat(dfd, last, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for len(content) > 0 {
		n, err := unix.Write(fd, content)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		content = content[n:]
	}
	return nil
}
