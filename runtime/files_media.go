package runtime

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// The media types of files out, judged from a built-in table (never the
// host's /etc/mime.types, so every host answers alike).
const (
	mediaPNG    = "image/png"
	mediaJPEG   = "image/jpeg"
	mediaGIF    = "image/gif"
	mediaWebP   = "image/webp"
	mediaSVG    = "image/svg+xml"
	mediaPDF    = "application/pdf"
	mediaCSV    = "text/csv"
	mediaJSON   = "application/json"
	mediaText   = "text/plain"
	mediaBinary = "application/octet-stream"
)

// signatures are the leading bytes of the binary formats the table knows.
var signatures = []struct {
	prefix string
	media  string
}{
	{"\x89PNG\r\n\x1a\n", mediaPNG},
	{"\xff\xd8\xff", mediaJPEG},
	{"GIF87a", mediaGIF},
	{"GIF89a", mediaGIF},
	{"%PDF-", mediaPDF},
}

// byExtension is what a name alone says, for a file listed without its
// content.
var byExtension = map[string]string{
	".png": mediaPNG, ".jpg": mediaJPEG, ".jpeg": mediaJPEG, ".gif": mediaGIF,
	".webp": mediaWebP, ".svg": mediaSVG, ".pdf": mediaPDF, ".csv": mediaCSV,
	".json": mediaJSON, ".txt": mediaText,
}

// textSniff is how much of a file's start is looked at to tell text.
const textSniff = 8 << 10

// mediaType judges a file out's media type. With content, the content
// decides: a known signature, else text (UTF-8, no NUL, in its first
// textSniff bytes), which the name then makes SVG, CSV or JSON; else
// application/octet-stream, whatever the name says. Without content (a
// file over the caps), the name's extension alone.
func mediaType(name string, content []byte) string {
	ext := strings.ToLower(path.Ext(name))
	if content == nil {
		if m, ok := byExtension[ext]; ok {
			return m
		}
		return mediaBinary
	}
	for _, s := range signatures {
		if bytes.HasPrefix(content, []byte(s.prefix)) {
			return s.media
		}
	}
	if len(content) >= 12 && string(content[:4]) == "RIFF" && string(content[8:12]) == "WEBP" {
		return mediaWebP
	}
	if !looksLikeText(content) {
		return mediaBinary
	}
	switch m := byExtension[ext]; m {
	case mediaSVG:
		if bytes.Contains(content[:min(len(content), textSniff)], []byte("<svg")) {
			return mediaSVG
		}
	case mediaCSV, mediaJSON:
		return m
	}
	return mediaText
}

// looksLikeText reports whether the start of b is UTF-8 without NUL (a
// character cut at the sniff's end still counts).
func looksLikeText(b []byte) bool {
	head := b[:min(len(b), textSniff)]
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n <= 1 {
			return len(b) > textSniff && len(head) < utf8.UTFMax && !utf8.FullRune(head)
		}
		head = head[n:]
	}
	return true
}
