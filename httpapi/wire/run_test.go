package wire

import (
	"encoding/base64"
	"testing"
)

// TestFilesOf: a file's content comes back decoded; one that does not
// decode is left out, its file kept.
func TestFilesOf(t *testing.T) {
	bad := "%%%"
	if files := FilesOf([]FileOut{{Name: "a", Content: &bad}}); files[0].Content != nil {
		t.Errorf("content that does not decode: %q", files[0].Content)
	}
	good := base64.StdEncoding.EncodeToString([]byte("x"))
	if files := FilesOf([]FileOut{{Name: "a", Content: &good}}); string(files[0].Content) != "x" {
		t.Errorf("content %q", files[0].Content)
	}
}
