package sandboxd

// File is one file handed to a program (Job.Files) or produced by it
// (Result.Files).
type File struct {
	// Name is the file's path relative to the program's working directory,
	// with "/" between its parts: never absolute, never with "." or ".."
	// parts, never with a NUL.
	Name string
	// Content is the file's bytes. On a file out it is nil when the file was
	// over the caps (listed by name and size only, with FilesTruncated set).
	Content []byte
	// Size is the file's size in bytes (len(Content) when it is there).
	Size int64
	// MediaType is the file's media type, judged from its content and
	// name (files out only), e.g. "image/png".
	MediaType string
}
