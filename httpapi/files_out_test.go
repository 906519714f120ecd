package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// mustImage encodes a small picture with encode (png.Encode, a jpeg
// encoder).
func mustImage(t *testing.T, encode func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 2, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	if err := encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// filesOutRunner is a runner whose result holds a chart, a photo, a CSV, a
// file listed without its content and an image without it, truncated.
func filesOutRunner(t *testing.T) (*fakeRunner, []byte, []byte) {
	t.Helper()
	chart := mustImage(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	photo := mustImage(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	res := sandboxd.Result{Status: sandboxd.StatusOK, FilesTruncated: true, Files: []sandboxd.File{
		{Name: "figure-1.png", Content: chart, Size: int64(len(chart)), MediaType: "image/png"},
		{Name: "huge.png", Size: 1 << 30, MediaType: "image/png"},
		{Name: "out/photo.jpg", Content: photo, Size: int64(len(photo)), MediaType: "image/jpeg"},
		{Name: "out/sum.csv", Content: []byte("a,b\n1,2\n"), Size: 8, MediaType: "text/csv"},
		{Name: "touched", Content: []byte{}, Size: 0, MediaType: "application/octet-stream"},
	}}
	return &fakeRunner{result: res}, chart, photo
}

// TestAnswerCarriesFilesOut: the HTTP answer lists every file out with its
// name, size and media type, the content in base64 when the runtime gave
// it (an empty file's as ""), none for a file over the caps, and
// files_truncated.
func TestAnswerCarriesFilesOut(t *testing.T) {
	runner, chart, _ := filesOutRunner(t)
	rec := do(t, newFilesServer(runner, &fakeGate{}).Handler(), "POST", "/v1/code", `{"code":"x","environment":"data"}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got struct {
		Environment    string           `json:"environment"`
		FilesTruncated bool             `json:"files_truncated"`
		Files          []map[string]any `json:"files"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Environment != "data" || !got.FilesTruncated || len(got.Files) != 5 {
		t.Fatalf("answer %s", rec.Body)
	}
	png0, err := base64.StdEncoding.DecodeString(got.Files[0]["content"].(string))
	if err != nil || !bytes.Equal(png0, chart) || got.Files[0]["size"] != float64(len(chart)) ||
		got.Files[0]["media_type"] != "image/png" || got.Files[0]["name"] != "figure-1.png" {
		t.Errorf("chart %v", got.Files[0])
	}
	if _, has := got.Files[1]["content"]; has || got.Files[1]["size"] != float64(1<<30) {
		t.Errorf("a file over the caps is listed with content: %v", got.Files[1])
	}
	if got.Files[4]["content"] != "" {
		t.Errorf("an empty file's content is %v, want \"\"", got.Files[4]["content"])
	}
	for _, f := range got.Files {
		_, hasContent := f["content"]
		if f["name"] == nil || f["size"] == nil || f["media_type"] == nil || len(f) != 3+map[bool]int{true: 1}[hasContent] {
			t.Errorf("file %v: want name, size, media_type and content only", f)
		}
	}
}

// TestMCPReturnsImages: run_python's result has the text, then one image
// block per image file out with content (PNG and JPEG here, in order),
// each decoding as its picture; structuredContent is the HTTP answer.
func TestMCPReturnsImages(t *testing.T) {
	runner, chart, photo := filesOutRunner(t)
	api := newFilesServer(runner, &fakeGate{})
	files := []any{file("sales.csv", b64("a,b\n1,2\n"))}
	res := callTool(t, mustMCP(t, api), map[string]any{"code": "x", "environment": "data", "files": files}, nil)
	if res.IsError {
		t.Fatalf("tool error: %s", text(t, res))
	}
	if job := runner.jobs[0]; job.Environment != "data" || len(job.Files) != 1 || string(job.Files[0].Content) != "a,b\n1,2\n" {
		t.Errorf("job %+v", job)
	}
	if txt := text(t, res); !strings.Contains(txt, "file \"figure-1.png\": ") || !strings.Contains(txt, "\"huge.png\": 1073741824 bytes, image/png, content left out") {
		t.Errorf("text %q does not list the files", txt)
	}
	if len(res.Content) != 3 {
		t.Fatalf("%d content blocks, want text and two images", len(res.Content))
	}
	for i, want := range []struct {
		mime   string
		data   []byte
		decode func([]byte) (image.Image, error)
	}{
		{"image/png", chart, func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }},
		{"image/jpeg", photo, func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }},
	} {
		img, ok := res.Content[i+1].(*mcp.ImageContent)
		if !ok {
			t.Fatalf("content[%d] is %T, not an image", i+1, res.Content[i+1])
		}
		if img.MIMEType != want.mime || !bytes.Equal(img.Data, want.data) {
			t.Errorf("image %d: %s, %d bytes; want %s, %d bytes", i, img.MIMEType, len(img.Data), want.mime, len(want.data))
		}
		if pic, err := want.decode(img.Data); err != nil || pic.Bounds().Dx() != 4 || pic.Bounds().Dy() != 3 {
			t.Errorf("image %d does not decode as the 4x3 picture: %v", i, err)
		}
	}
	httpAnswer := do(t, api.Handler(), "POST", "/v1/code", `{"code":"x","environment":"data"}`).Body.Bytes()
	var fromHTTP map[string]any
	if err := json.Unmarshal(httpAnswer, &fromHTTP); err != nil {
		t.Fatal(err)
	}
	if got := structured(t, res); !sameJSON(got, fromHTTP) {
		t.Errorf("structuredContent %v\nis not the HTTP answer %v", got, fromHTTP)
	}
}
