package interop

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The chart example of the tests and of docs/data.md: testdata/sales.csv in,
// testdata/chart.py reads it with pandas, saves one chart with plt.savefig and leaves a
// second to plt.show(), which the data image saves as figure-1.png.
const (
	chartCSV     = "sales.csv"
	chartProgram = "chart.py"
	// chartStdout is what chart.py prints: the sales summed by month.
	chartStdout = "month\nJan    215\nFeb    236\nMar    278\n"
)

// chartFiles are the files the chart example returns, in name order: the figure left to
// plt.show() and the chart saved by name; the CSV it only read is not among them.
var chartFiles = []string{"figure-1.png", "sales.png"}

// pngMagic starts every PNG file.
var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// fileIn is one file of a request, as the API takes it.
type fileIn struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// fileOut is one file of an answer, spelled from the contract rather than taken from
// the server's types (a misnamed field would pass on both sides). Content is nil when
// the file is listed without it.
type fileOut struct {
	Name      string  `json:"name"`
	Size      int64   `json:"size"`
	MediaType string  `json:"media_type"`
	Content   *string `json:"content"`
}

// dataAnswer is the answer of POST /v1/code (and an MCP run's structuredContent) with
// the data environment's fields. FilesTruncated is a pointer so that a missing field shows.
type dataAnswer struct {
	Environment    string    `json:"environment"`
	Stdout         string    `json:"stdout"`
	Stderr         string    `json:"stderr"`
	ExitCode       int       `json:"exit_code"`
	Status         string    `json:"status"`
	Files          []fileOut `json:"files"`
	FilesTruncated *bool     `json:"files_truncated"`
	Error          string    `json:"error"`
}

// testdata reads a file of test/interop/testdata.
func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(interopDir, "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chartArguments is the chart example as run_python's arguments (and the body of
// POST /v1/code).
func chartArguments(t testing.TB) map[string]any {
	t.Helper()
	return map[string]any{
		"environment": "data",
		"code":        string(testdata(t, chartProgram)),
		"files":       []fileIn{{Name: chartCSV, Content: base64.StdEncoding.EncodeToString(testdata(t, chartCSV))}},
	}
}

// decodePNG checks that b64 is standard base64 of a PNG that image/png decodes, and
// returns its bytes.
func decodePNG(t testing.TB, what, b64 string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Errorf("%s: not standard base64: %v", what, err)
		return nil
	}
	if !bytes.HasPrefix(raw, pngMagic) {
		t.Errorf("%s: %d bytes that do not start with PNG's magic: %q", what, len(raw), raw[:min(len(raw), 16)])
		return raw
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Errorf("%s: image/png.Decode: %v", what, err)
		return raw
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: a %dx%d image, too small for a chart", what, b.Dx(), b.Dy())
	}
	return raw
}

// checkChartAnswer checks a delivered run of the chart example: the environment echoed,
// chart.py's stdout, and exactly chartFiles out, each a PNG of its stated size with media
// type image/png, nothing truncated. It returns the files' contents by name.
func checkChartAnswer(t testing.TB, a dataAnswer) map[string]string {
	t.Helper()
	if a.Status != "ok" || a.ExitCode != 0 || a.Stdout != chartStdout {
		t.Errorf("run: status %q, exit %d, stdout %q (want %q), stderr %q, error %q",
			a.Status, a.ExitCode, a.Stdout, chartStdout, a.Stderr, a.Error)
	}
	if a.Environment != "data" {
		t.Errorf("environment %q, want the echo of %q", a.Environment, "data")
	}
	if a.FilesTruncated == nil || *a.FilesTruncated {
		t.Errorf("files_truncated %v, want present and false", a.FilesTruncated)
	}
	contents := map[string]string{}
	var names []string
	for _, f := range a.Files {
		names = append(names, f.Name)
		if f.MediaType != "image/png" || f.Content == nil {
			t.Errorf("file %s: media_type %q, content present %v; want image/png with content", f.Name, f.MediaType, f.Content != nil)
			continue
		}
		if raw := decodePNG(t, f.Name, *f.Content); int64(len(raw)) != f.Size {
			t.Errorf("file %s: size %d, its content has %d bytes", f.Name, f.Size, len(raw))
		}
		contents[f.Name] = *f.Content
	}
	if !slices.Equal(names, chartFiles) {
		t.Errorf("files out %q, want %q in name order (the CSV read unchanged is not returned)", names, chartFiles)
	}
	return contents
}

// asDataAnswer re-reads a decoded JSON object (an MCP structuredContent) as a dataAnswer.
func asDataAnswer(t testing.TB, v any) dataAnswer {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a dataAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("not an answer: %v: %s", err, raw)
	}
	return a
}

// warmWait bounds waitWarm.
const warmWait = 60 * time.Second

// waitWarm waits until the service's warm pools are full (sandboxd_pool_idle_containers
// reaches sandboxd_pool_target_containers, summed over the environments), so that a data
// run meets a container that has imported numpy, pandas and matplotlib, as a call at an
// agent's pace does. It never fails the test: past warmWait the run goes ahead and may
// start its own container, which must still answer within the timeout.
func waitWarm(t testing.TB, svc *service) {
	t.Helper()
	deadline := time.Now().Add(warmWait)
	for time.Now().Before(deadline) {
		m := poolGauges(svc.MetricsURL() + "/metrics")
		if m["target"] > 0 && m["idle"] >= m["target"] {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the warm pools were not full within %s; running anyway", warmWait)
}

// poolGauges reads the idle and target gauges of the warm pools from the metrics at url;
// none when it cannot.
func poolGauges(url string) map[string]float64 {
	out := map[string]float64{}
	res, err := httpClient.Get(url)
	if err != nil {
		return out
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(body), "\n") {
		for key, name := range map[string]string{"idle": "sandboxd_pool_idle_containers ", "target": "sandboxd_pool_target_containers "} {
			if v, ok := strings.CutPrefix(line, name); ok {
				out[key], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	return out
}
