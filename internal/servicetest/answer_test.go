package servicetest

import (
	"encoding/json"
	"testing"
)

// TestAnswerDecodesFiles: an answer's environment, files and
// files_truncated decode, and File finds a file and decodes its content.
func TestAnswerDecodesFiles(t *testing.T) {
	body := `{"lang":"python","environment":"data","files_truncated":true,"files":[` +
		`{"name":"figure-1.png","size":3,"media_type":"image/png","content":"iVBO"},` +
		`{"name":"huge.bin","size":99999999,"media_type":"application/octet-stream"},` +
		`{"name":"bad","size":1,"media_type":"text/plain","content":"!"}]}`
	var a Answer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if a.Environment != "data" || !a.FilesTruncated || len(a.Files) != 3 {
		t.Fatalf("answer %+v", a)
	}
	if f, content, ok := a.File("figure-1.png"); !ok || string(content) != "\x89PN" || f.MediaType != "image/png" || f.Size != 3 {
		t.Errorf("figure: %+v %q %v", f, content, ok)
	}
	if f, content, ok := a.File("huge.bin"); !ok || content != nil || f.Size != 99999999 {
		t.Errorf("huge: %+v %q %v", f, content, ok)
	}
	if _, _, ok := a.File("bad"); ok {
		t.Error("content that is not base64 was taken")
	}
	if _, _, ok := a.File("missing"); ok {
		t.Error("a missing file was found")
	}
}
