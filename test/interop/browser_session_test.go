package interop

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The "keep state between runs" switch of the try-it page (session.js): free here,
// paid from the injected wallet in TestBrowserSessionPaid.

// keepSwitch is the switch whose accessible name is "keep state between runs".
var keepSwitch = chromedp.Search(`//label[normalize-space(.)="keep state between runs"]/input[@role="switch"]`)

// sessionView is what the page shows of its session and of a call's result.
type sessionView struct {
	Line   string `json:"line"`
	Result string `json:"result"`
}

// sessionJS reads the session's line and the result region by its accessible label.
const sessionJS = `(() => { const l = document.getElementById("session"); const r = document.querySelector('[aria-label="result"]');
 return { line: l.hidden ? "" : l.textContent, result: r && !r.closest("[hidden]") ? r.textContent : "" }; })()`

// sessionIDs are the session ids the page's requests named, in order, each once.
func (p *page) sessionIDs() []string {
	var ids []string
	for _, r := range p.sent() {
		id := pageSessionID.FindString(r.url)
		if id != "" && (len(ids) == 0 || ids[len(ids)-1] != id) {
			ids = append(ids, id)
		}
	}
	return ids
}

var pageSessionID = regexp.MustCompile(`ses_[0-9a-f]{32}`)

// sessionStatus is the HTTP status of GET /v1/sessions/{id} on base.
func sessionStatus(t *testing.T, base, id string) int {
	t.Helper()
	res, err := httpClient.Get(base + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// runInSession types code, presses Run and returns the answer and what the page says
// of the session.
func (p *page) runInSession(t *testing.T, code, state string) (answer, sessionView) {
	t.Helper()
	p.typeCode(t, code, "")
	a := p.run(t, state)
	return a, eval[sessionView](t, p, sessionJS)
}

// TestBrowserSession drives the switch in chromium against a free sandboxd: on, x = 41
// then x + 1 shows 42 in one session (an import and a file in /tmp carry over too); a
// program that ends its interpreter ends the session, and the page says so and opens a
// new one on the next run; a session ended behind the page's back is reported gone; off
// closes the session on the server and runs go back to /v1/code.
func TestBrowserSession(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("browser-session"), true, "SANDBOX_RUNTIME_TIMEOUT=5s")
	p := openPage(t, svc.URL, "")
	p.do(t, "turning the switch on", chromedp.Click(keepSwitch))
	if v := eval[sessionView](t, p, sessionJS); !strings.Contains(v.Line, "the next run opens a session") {
		t.Errorf("after the switch the line reads %q", v.Line)
	}
	a, v := p.runInSession(t, "x = 41", "session-first")
	if a.Status != "ok" || !strings.HasPrefix(v.Result, "no value") || !strings.Contains(v.Line, "1 run") {
		t.Fatalf("first call: %+v %+v, want ok, no value and a session of 1 run", a, v)
	}
	if !regexp.MustCompile(`^Session ses_[0-9a-f]{8}… · Python in python · 1 run · expires in [0-9]+:[0-5][0-9] \(`).MatchString(v.Line) {
		t.Errorf("the session line %q: want its id shortened, its environment, its runs and its expiry", v.Line)
	}
	a, v = p.runInSession(t, "x + 1", "session-42")
	if a.Status != "ok" || v.Result != "42" || !strings.Contains(v.Line, "2 runs") {
		t.Fatalf("second call: %+v %+v, want result 42 in a session of 2 runs", a, v)
	}
	p.phoneShot(t, "session-42")
	a, v = p.runInSession(t, "import json\nopen('/tmp/n.txt', 'w').write(json.dumps({'x': x}))", "session-tmp")
	a, v = p.runInSession(t, "print(json.loads(open('/tmp/n.txt').read())['x'] + 1)\nx", "session-state")
	if a.Stdout != "42\n" || v.Result != "41" {
		t.Errorf("the import and /tmp: %+v %+v, want stdout 42 and result 41", a, v)
	}
	// A result made of markup is shown as the text of its repr, never as elements.
	_, v = p.runInSession(t, `'<img src="/pwned-by-result" onerror="window.__pwned = 1">'`, "session-hostile-result")
	if v.Result != `'<img src="/pwned-by-result" onerror="window.__pwned = 1">'` {
		t.Errorf("the markup result shows as %q", v.Result)
	}
	if n := eval[int](t, p, `document.querySelectorAll('[aria-label="result"] *, #session *').length`); n != 0 {
		t.Errorf("the result and session regions hold %d elements, want none", n)
	}
	if got := eval[string](t, p, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("window.__pwned = %s: the result ran", got)
	}
	ids := p.sessionIDs()
	if len(ids) != 1 {
		t.Fatalf("the page used sessions %v, want one", ids)
	}
	t.Run("ended-by-program", func(t *testing.T) {
		_, v := p.runInSession(t, "import os\nos._exit(3)", "session-ended")
		if !strings.Contains(v.Line, "ended in this run") || !strings.Contains(v.Line, "the next run opens a new session") {
			t.Errorf("after os._exit the line reads %q", v.Line)
		}
		p.phoneShot(t, "session-ended")
		a, v := p.runInSession(t, "x", "session-fresh")
		if a.Status != "error" || !strings.Contains(a.Stderr, "NameError") || !strings.Contains(v.Line, "1 run") {
			t.Errorf("the run after the end: %+v %+v, want a NameError in a new session", a, v)
		}
		if ids := p.sessionIDs(); len(ids) != 2 {
			t.Errorf("sessions %v, want a second one", ids)
		}
	})
	t.Run("gone", func(t *testing.T) {
		ids := p.sessionIDs()
		id := ids[len(ids)-1]
		req, _ := http.NewRequest(http.MethodDelete, svc.URL+"/v1/sessions/"+id, nil)
		res, err := httpClient.Do(req)
		if err != nil || res.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE behind the page's back: %v %v", res, err)
		}
		res.Body.Close()
		a, v := p.runInSession(t, "x = 1", "session-gone")
		if a.Status != "session gone" || !strings.Contains(v.Line, "is gone: ") || !strings.Contains(v.Line, "the next run opens a new session") {
			t.Errorf("a run in a deleted session: %+v %+v", a, v)
		}
		a, v = p.runInSession(t, "2 + 2", "session-reopened")
		if a.Status != "ok" || v.Result != "4" || len(p.sessionIDs()) != 3 {
			t.Errorf("the run after: %+v %+v, sessions %v, want 4 in a third session", a, v, p.sessionIDs())
		}
	})
	t.Run("off", func(t *testing.T) {
		ids := p.sessionIDs()
		id := ids[len(ids)-1]
		p.do(t, "turning the switch off", chromedp.Click(keepSwitch))
		waitFor(10*time.Second, func() bool { return sessionStatus(t, svc.URL, id) == http.StatusNotFound })
		if got := sessionStatus(t, svc.URL, id); got != http.StatusNotFound {
			t.Errorf("after the switch went off GET of the session is %d, want 404", got)
		}
		a, v := p.runInSession(t, "print(6*7)", "session-off")
		last := p.sent()[len(p.sent())-1]
		if a.Stdout != "42\n" || v.Result != "" || !strings.HasSuffix(last.url, "/v1/code") {
			t.Errorf("with the switch off: %+v %+v, last request %s %s, want a one-shot run", a, v, last.method, last.url)
		}
	})
}

// TestBrowserSessionPaid: with the switch on against a paying sandboxd, the open and each
// call are paid from the injected wallet, through the same terms and signature as a run,
// and each is settled exactly once.
func TestBrowserSessionPaid(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("browser-session-paid"), true, paymentEnv(env)...)
	p := openPage(t, svc.URL, walletScript(t, "0x14a34", false), exposeSigner(t, payer.key))
	p.do(t, "turning the switch on", chromedp.Click(keepSwitch))

	before := snapshot(t, c)
	p.typeCode(t, "x = 41", "")
	terms := p.askTerms(t)
	title := eval[string](t, p, `document.getElementById("pay-title").textContent`)
	if !strings.Contains(title, "Opening a session is paid") || !strings.Contains(terms, payee.address) {
		t.Errorf("the open's terms: %q %q", title, terms)
	}
	p.phoneShot(t, "session-open-terms")
	a := p.pay(t, "session-opened")
	if !a.PayShown || !strings.Contains(a.Settled, "Paid, settled on chain") {
		t.Fatalf("after paying the open: %+v, want its settlement and the first call's terms", a)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	expectMovedAmount(t, c, before, payer.address, shownAmount(t, terms))

	before = snapshot(t, c)
	a = p.pay(t, "session-first")
	if a.Status != "ok" || !strings.Contains(a.Settled, "Paid, settled on chain") {
		t.Fatalf("first call: %+v", a)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == before.payee+price })
	expectMoved(t, c, before, payer.address)

	before = snapshot(t, c)
	p.typeCode(t, "x + 1", "")
	p.do(t, "pressing Run", chromedp.Click(runButton))
	p.do(t, "waiting for the terms", chromedp.WaitVisible(chromedp.ID("pay-wallet")))
	a = p.pay(t, "session-42")
	v := eval[sessionView](t, p, sessionJS)
	if a.Status != "ok" || v.Result != "42" || !strings.Contains(v.Line, "2 runs") {
		t.Fatalf("second call: %+v %+v, want 42 in a session of 2 runs", a, v)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == before.payee+price })
	expectMoved(t, c, before, payer.address)
	p.phoneShot(t, "session-42")
	p.expectSent(t, 3)
	if ids := p.sessionIDs(); len(ids) != 1 {
		t.Errorf("sessions %v, want one", ids)
	}
}

// shownAmount is the atomic amount in the terms the page shows ("… (5000 atomic units)").
func shownAmount(t *testing.T, terms string) int64 {
	t.Helper()
	m := regexp.MustCompile(`\((\d+) atomic units\)`).FindStringSubmatch(terms)
	if m == nil {
		t.Fatalf("no amount in the terms %q", terms)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestBrowserSessionExpiry: a session that passes its idle timeout is shown as expired
// by the page on its own (no run needed), and the next run opens a new session in which
// the old state is gone.
func TestBrowserSessionExpiry(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("browser-session-expiry"), true, "SANDBOX_SESSIONS_IDLE_TIMEOUT=2s")
	p := openPage(t, svc.URL, "")
	p.do(t, "turning the switch on", chromedp.Click(keepSwitch))
	if a, v := p.runInSession(t, "x = 1", "session-open"); a.Status != "ok" || !strings.Contains(v.Line, "1 run") {
		t.Fatalf("first call: %+v %+v", a, v)
	}
	p.do(t, "waiting for the expiry", chromedp.Poll[chromedp.Void](`document.getElementById("session").textContent.includes("expired")`,
		chromedp.WithPollingTimeout(20*time.Second)))
	p.shot("session-expired")
	v := eval[sessionView](t, p, sessionJS)
	if !strings.Contains(v.Line, "(2 s after its last run, or at the end of its lifetime). Its state is gone; the next run opens a new session.") {
		t.Errorf("after the idle timeout the line reads %q", v.Line)
	}
	a, v := p.runInSession(t, "x", "session-after-expiry")
	if a.Status != "error" || !strings.Contains(a.Stderr, "NameError") || len(p.sessionIDs()) != 2 {
		t.Errorf("the run after the expiry: %+v %+v, sessions %v; want a NameError in a new session", a, v, p.sessionIDs())
	}
}
