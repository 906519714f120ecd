package runtime

import (
	"errors"
	"fmt"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// The files of a run travel as records (internal/runnerproto): the files in
// after the program's standard input on stdin, the files out in the files
// section after the end marker on stdout.

// errFiles is the error of a files section that does not parse; the run's
// answer then has no files and FilesTruncated set.
var errFiles = errors.New("runtime: malformed files section")

// recordSize is the length of a record of kind "c" for a file.
func recordSize(name string, size int) int {
	return len(runnerproto.AppendRecord(nil, runnerproto.KindContent, name, int64(size))) + size
}

// checkFilesIn checks a job's files in against the caps and the naming
// rules once more (the API has validated them; the runner checks the names
// again), so no caller can hand the runner more than the caps.
func checkFilesIn(files []sandboxd.File, maxFiles int, maxBytes int64) error {
	if len(files) > maxFiles {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "runtime.run", "%d files in, over runtime.max_files (%d)", len(files), maxFiles)
	}
	var total int64
	for _, f := range files {
		if why := runnerproto.ValidName(f.Name); why != "" {
			return sandboxd.Errorf(sandboxd.CodeInvalid, "runtime.run", "file %q: %s", f.Name, why)
		}
		total += int64(len(f.Content))
	}
	if total > maxBytes {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "runtime.run", "%d bytes of files in, over runtime.max_files_bytes (%d)", total, maxBytes)
	}
	return nil
}

// parseFiles reads the files out from a files section, with a bound on
// every step: at most maxFiles files with content, maxBytes bytes of it in
// all, maxFiles+runnerproto.ListExtra records, names valid and strictly in
// order (so none twice). The contents are slices of b. listed reports a
// file listed without content. Anything else is errFiles: a section the
// runner did not write (a program can forge one) is ignored, never trusted
// further.
func parseFiles(b []byte, maxFiles int, maxBytes int64) (files []sandboxd.File, listed bool, err error) {
	recs, err := runnerproto.ParseRecords(b, maxFiles+runnerproto.ListExtra)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errFiles, err)
	}
	var used int64
	kept, prev := 0, ""
	for _, r := range recs {
		if r.Name <= prev { // valid names are never empty
			return nil, false, fmt.Errorf("%w: %q after %q, out of order", errFiles, r.Name, prev)
		}
		f := sandboxd.File{Name: r.Name, Size: r.Size, Content: r.Content}
		if r.Kind == runnerproto.KindContent {
			if kept >= maxFiles || r.Size > maxBytes-used {
				return nil, false, fmt.Errorf("%w: %q over the caps", errFiles, r.Name)
			}
			used += r.Size
			kept++
		} else {
			listed = true
		}
		f.MediaType = mediaType(r.Name, f.Content)
		files = append(files, f)
		prev = r.Name
	}
	return files, listed, nil
}
