package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's chromium (headless) through chromedp
// against a real sandboxd: the try-it page at / in free mode (browser_free_test.go)
// and paid from an injected EIP-1193 wallet on anvil (browser_paid_test.go). They
// run with the interop tests and, like them, fail when the browser cannot start.
//
// Each test keeps a screenshot of each state it reached; when it fails (or with
// SANDBOXD_BROWSER_SHOTS=1) they are written to test/interop/testdata-out/<test>/.

// chromiumPath is Debian's chromium; SANDBOXD_CHROMIUM names another.
func chromiumPath() string {
	if p := os.Getenv("SANDBOXD_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Viewports of the screenshots: a laptop and a phone.
const (
	laptopWidth, laptopHeight = 1280, 900
	phoneWidth, phoneHeight   = 390, 844
)

// page is one browser tab on a sandboxd, with what the test saw of it.
type page struct {
	t   *testing.T // the test that opened it: its failure keeps the screenshots
	ctx context.Context
	url string

	mu       sync.Mutex
	requests []sentRequest // the calls of /v1/code and /v1/sessions the page made
	shots    []shot
}

// sentRequest is one request of the page to /v1/code or /v1/sessions.
type sentRequest struct {
	method  string
	url     string
	paid    bool   // it carried PAYMENT-SIGNATURE
	payment string // its value
}

// shot is a screenshot of a named state.
type shot struct {
	name string
	png  []byte
}

// openBlank starts a fresh headless chromium on url, a page that is not sandboxd's.
func openBlank(t *testing.T, url string) *page {
	t.Helper()
	p := startBrowser(t, url)
	p.do(t, "loading "+url, chromedp.Navigate(url))
	return p
}

// openPage starts a fresh headless chromium (its own profile), with script, when
// set, evaluated in every document before the page's own scripts, and loads base + "/".
// The browser is stopped when the test ends; on failure the screenshots are kept.
func openPage(t *testing.T, base, script string, expose ...chromedp.Action[chromedp.Void]) *page {
	t.Helper()
	p := startBrowser(t, base)
	steps := append([]chromedp.Action[chromedp.Void]{}, expose...)
	if script != "" {
		steps = append(steps, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument,
				cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: script})
			return err
		}))
	}
	steps = append(steps, chromedp.EmulateViewport(laptopWidth, laptopHeight), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(runButton))
	p.do(t, "loading "+base+"/", steps...)
	p.shot("loaded")
	return p
}

// startBrowser starts a fresh headless chromium with its own profile, watching the
// requests of its tab. It is stopped when the test ends; on failure the screenshots
// are kept.
func startBrowser(t *testing.T, base string) *page {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath()); err != nil {
		t.Fatalf("chromium missing at %s (apt-get install chromium; make test installs it): %v", chromiumPath(), err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(laptopWidth, laptopHeight),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 4*time.Minute)
	p := &page{t: t, ctx: ctx, url: base}
	t.Cleanup(func() {
		p.keepShots()
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	p.watchRequests()
	return p
}

// watchRequests records each request of the page to /v1/code or /v1/sessions and
// whether it paid.
func (p *page) watchRequests() {
	err := chromedp.Listen(p.ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok || !strings.HasSuffix(e.Request.URL, "/v1/code") && !strings.Contains(e.Request.URL, "/v1/sessions") {
			return
		}
		r := sentRequest{method: e.Request.Method, url: e.Request.URL}
		for k, v := range e.Request.Headers {
			if strings.EqualFold(k, "PAYMENT-SIGNATURE") {
				r.paid, r.payment = true, fmt.Sprint(v)
			}
		}
		p.mu.Lock()
		p.requests = append(p.requests, r)
		p.mu.Unlock()
	})
	if err == nil {
		_, err = chromedp.Call(p.ctx, network.Enable, network.EnableParams{})
	}
	if err != nil {
		p.t.Fatalf("watching the page's requests: %v", err)
	}
}

// sent returns the requests of the page to /v1/code and /v1/sessions so far.
func (p *page) sent() []sentRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sentRequest(nil), p.requests...)
}

// stepTimeout bounds each step of a browser test.
const stepTimeout = 100 * time.Second

// do runs actions on the tab, failing t with what when one fails or takes longer
// than stepTimeout.
func (p *page) do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.shot("failed-" + what)
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](t testing.TB, p *page, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// runButton is the button whose accessible name is "Run".
var runButton = chromedp.Search(`//button[normalize-space(.)="Run"]`)

// labelled returns the selector of the field whose label reads name.
func (p *page) labelled(t testing.TB, name string) chromedp.ID {
	t.Helper()
	id := eval[string](t, p, `(() => { const l = [...document.querySelectorAll("label")].find((l) => l.textContent.trim() === `+
		strconv.Quote(name)+`); return l ? l.htmlFor : ""; })()`)
	if id == "" {
		t.Fatalf("no field labelled %q", name)
	}
	return chromedp.ID(id)
}

// typeCode types the program into the field labelled "Code" and puts stdin in the
// one labelled "Stdin".
func (p *page) typeCode(t testing.TB, code, stdin string) {
	t.Helper()
	codeField, stdinField := p.labelled(t, "Code"), p.labelled(t, "Stdin")
	p.clear(t, codeField)
	p.clear(t, stdinField)
	p.do(t, "typing the program", chromedp.SendKeys(codeField, code))
	if stdin != "" {
		p.do(t, "typing stdin", chromedp.SendKeys(stdinField, stdin))
	}
}

// clear empties a field, as selecting all and deleting does.
func (p *page) clear(t testing.TB, field chromedp.ID) {
	t.Helper()
	eval[bool](t, p, `(() => { document.getElementById(`+strconv.Quote(string(field))+`).value = ""; return true; })()`)
}

// run presses "Run" and waits until the page shows an answer (the status is no
// longer "running…"), and returns it.
func (p *page) run(t testing.TB, state string) answer {
	t.Helper()
	p.do(t, "pressing Run", chromedp.Click(runButton))
	return p.waitAnswer(t, state)
}

// answer is what the page shows of a run.
type answer struct {
	Status   string `json:"status"`
	Message  string `json:"message"`
	Exit     string `json:"exit"`
	Duration string `json:"duration"`
	CPU      string `json:"cpu"`
	RSS      string `json:"rss"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Settled  string `json:"settled"`
	Note     string `json:"note"`
	Price    string `json:"price"`
	PayShown bool   `json:"payShown"`
}

// answerJS reads the answer by the regions' accessible labels.
const answerJS = `(() => { const t = (s) => { const e = document.querySelector(s); return e ? e.textContent : ""; };
 const set = document.getElementById("settlement");
 return { status: t("#status"), message: document.getElementById("message").hidden ? "" : t("#message"),
  exit: t("#exit"), duration: t("#duration"), cpu: t("#cpu"), rss: t("#rss"),
  stdout: t('[aria-label="stdout"]'), stderr: t('[aria-label="stderr"]'),
  settled: set.hidden ? "" : set.textContent.replace(/\s+/g, " ").trim(), note: t("#wallet-note"),
  price: t("#price"), payShown: !document.getElementById("pay").hidden }; })()`

// waitAnswer waits until the run button is enabled again and the status is not
// "running…", takes a screenshot named state and returns the answer.
func (p *page) waitAnswer(t testing.TB, state string) answer {
	t.Helper()
	p.do(t, "waiting for the answer", chromedp.Poll[chromedp.Void](
		`!document.getElementById("run").disabled && document.getElementById("status").textContent !== "running…"`,
		chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	p.shot(state)
	return eval[answer](t, p, answerJS)
}

// shot keeps a screenshot of the page as it is, named state.
func (p *page) shot(state string) {
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", state, err)
		return
	}
	p.mu.Lock()
	p.shots = append(p.shots, shot{name: fmt.Sprintf("%02d-%s", len(p.shots)+1, state), png: png})
	p.mu.Unlock()
}

// phoneShot takes a screenshot at a phone's width, then goes back to the laptop's.
func (p *page) phoneShot(t testing.TB, state string) {
	p.do(t, "phone viewport", chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2)))
	p.shot(state + "-phone")
	p.do(t, "laptop viewport", chromedp.EmulateViewport(laptopWidth, laptopHeight))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// keepShots writes the screenshots when the test failed or SANDBOXD_BROWSER_SHOTS=1.
func (p *page) keepShots() {
	if !p.t.Failed() && os.Getenv("SANDBOXD_BROWSER_SHOTS") != "1" {
		return
	}
	dir := filepath.Join(interopDir, "testdata-out", unsafeName.ReplaceAllString(p.t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Logf("screenshots: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.shots {
		_ = os.WriteFile(filepath.Join(dir, s.name+".png"), s.png, 0o644)
	}
	p.t.Logf("screenshots of each state: %s", dir)
}
