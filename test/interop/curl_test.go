package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// curlTimeout bounds one run of curl.
const curlTimeout = 60 * time.Second

// curlResult is what one run of curl got: the status, the headers and the body.
type curlResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode decodes the body as JSON into v, failing the test when it is not.
func (r curlResult) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("status %d, a body that is not JSON (%v): %.500s", r.Status, err, r.Body)
	}
}

// runCurl runs the real curl binary with args, keeping the body and headers in files
// beside it so that the body is exactly what curl received.
func runCurl(t testing.TB, args ...string) curlResult {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is not on PATH: %v", err)
	}
	dir := t.TempDir()
	bodyFile, headerFile := filepath.Join(dir, "body"), filepath.Join(dir, "headers")
	ctx, cancel := context.WithTimeout(context.Background(), curlTimeout)
	defer cancel()
	args = append(args, "-sS", "-o", bodyFile, "-D", headerFile, "-w", "%{http_code}")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl %.300s: %v (%s)", strings.Join(args, " "), err, stderrOf(err))
	}
	status, err := strconv.Atoi(string(out))
	if err != nil {
		t.Fatalf("curl printed %q for the status", out)
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		t.Fatal(err)
	}
	return curlResult{Status: status, Header: readHeaders(t, headerFile), Body: body}
}

// stderrOf is the stderr of a failed command, if it kept one.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// readHeaders reads the headers curl -D wrote (those of the last answer).
func readHeaders(t testing.TB, path string) http.Header {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if strings.HasPrefix(line, "HTTP/") {
			h = http.Header{}
		} else if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}

// curlJSON posts body to url with curl as the docs do (-d), from a file when it is
// too long for a command line.
func curlJSON(t testing.TB, url string, body any) curlResult {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 64<<10 {
		return runCurl(t, url, "-d", string(raw))
	}
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return runCurl(t, url, "--data-binary", "@"+file)
}

// TestCurlData runs curl against a real service in free mode with both environments:
// files out over the caps, and requests the API refuses (TestDocsExamples runs the
// documented examples).
func TestCurlData(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("curl-data"), true)
	t.Run("truncated", func(t *testing.T) { testFilesTruncated(t, svc.URL+"/v1/code") })
	t.Run("refused", func(t *testing.T) { testFilesRefused(t, svc.URL+"/v1/code") })
}

// testFilesTruncated: a file out over max_files_bytes (8 MiB) is listed by name and size
// without its content, files_truncated is true, and the run is still delivered.
func testFilesTruncated(t *testing.T, url string) {
	code := "open('big.bin', 'wb').write(b'x' * (9 << 20))\nopen('small.txt', 'w').write('hi\\n')\nprint('done')"
	r := curlJSON(t, url, map[string]any{"code": code})
	var a dataAnswer
	r.decode(t, &a)
	if r.Status != http.StatusOK || a.Status != "ok" || a.Stdout != "done\n" || a.Environment != "python" {
		t.Fatalf("status %d, answer %+v", r.Status, a)
	}
	if a.FilesTruncated == nil || !*a.FilesTruncated {
		t.Errorf("files_truncated %v, want true", a.FilesTruncated)
	}
	if len(a.Files) != 2 || a.Files[0].Name != "big.bin" || a.Files[1].Name != "small.txt" {
		t.Fatalf("files %+v, want big.bin and small.txt listed", a.Files)
	}
	if big := a.Files[0]; big.Size != 9<<20 || big.Content != nil {
		t.Errorf("big.bin: size %d, content present %v; want %d and no content", big.Size, big.Content != nil, 9<<20)
	}
	if small := a.Files[1]; small.Size != 3 {
		t.Errorf("small.txt: size %d, want 3", small.Size)
	}
}

// refusal is a request the API refuses before any run: the status and what the error
// must say.
type refusal struct {
	name   string
	body   map[string]any
	status int
	says   []string
}

// testFilesRefused: a name escaping the working directory (400 naming the file and the
// rule), more than max_files files (413), more than max_files_bytes in all (413, the
// files each under it) and an unknown environment (400 listing the configured names).
func testFilesRefused(t *testing.T, url string) {
	// one is a file of n zero bytes (n a multiple of 3, so its base64 has no padding).
	one := func(name string, n int) map[string]any {
		return map[string]any{"name": name, "content": strings.Repeat("AAAA", n/3)}
	}
	many := make([]map[string]any, 17)
	for i := range many {
		many[i] = one(fmt.Sprintf("f%02d.txt", i), 3)
	}
	const half = 4<<20 + 2 // a multiple of 3: two such files pass 8 MiB in all, each under it
	cases := []refusal{
		{"parent", files(one("../escape.txt", 3)), 400, []string{"../escape.txt", `".." part`}},
		{"nested parent", files(one("a/../../escape.txt", 3)), 400, []string{"a/../../escape.txt", `".." part`}},
		{"absolute", files(one("/etc/passwd", 3)), 400, []string{"/etc/passwd", "absolute"}},
		{"over max_files", files(many...), 413, []string{`"files" holds more than 16 items (max_files)`}},
		{"over max_files_bytes", files(one("a.bin", half), one("b.bin", half)), 413, []string{"8388612 bytes", "(max_files_bytes)"}},
		{"unknown environment", map[string]any{"environment": "r", "code": "print(1)"}, 400, []string{`"r" is not configured`, "python", "data"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := curlJSON(t, url, c.body)
			var a dataAnswer
			r.decode(t, &a)
			if r.Status != c.status || a.Error == "" {
				t.Fatalf("status %d, body %.300s; want %d with an error", r.Status, r.Body, c.status)
			}
			for _, s := range c.says {
				if !strings.Contains(a.Error, s) {
					t.Errorf("error %q does not say %q", a.Error, s)
				}
			}
		})
	}
}

// files is a request that hands fs to print(1) in the default environment.
func files(fs ...map[string]any) map[string]any {
	return map[string]any{"code": "print(1)", "files": fs}
}

// TestCurlDataImageMissing: with the data environment's image missing, /v1/health says
// so (503 naming the environment), a data run answers 503, and the python environment
// keeps serving.
func TestCurlDataImageMissing(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("curl-nodata"), false,
		"SANDBOX_ENVIRONMENTS_DATA_IMAGE=sandbox-python-data:missing-"+instance("e2e"))
	var health dataAnswer
	h := runCurl(t, svc.URL+"/v1/health")
	h.decode(t, &health)
	if h.Status != http.StatusServiceUnavailable || !strings.Contains(health.Error, "environment data") {
		t.Errorf("health: %d %s; want 503 naming the data environment", h.Status, h.Body)
	}
	var a dataAnswer
	r := curlJSON(t, svc.URL+"/v1/code", map[string]any{"code": "print(6*7)"})
	r.decode(t, &a)
	if r.Status != http.StatusOK || a.Stdout != "42\n" || a.Environment != "python" {
		t.Errorf("a python run: %d %s; want 200 and 42", r.Status, r.Body)
	}
	r = curlJSON(t, svc.URL+"/v1/code", map[string]any{"environment": "data", "code": "print(6*7)"})
	r.decode(t, &a)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(a.Error, "missing") {
		t.Errorf("a data run: %d %s; want 503 saying the image is missing", r.Status, r.Body)
	}
}
