package interop

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The language switch of the try-it page (language.js), driven in chromium against a
// real sandboxd whose node environment runs JavaScript, TypeScript and Bash.

// languageRadio is the radio of the switch whose legend is "Language" and whose label
// reads title.
func languageRadio(title string) chromedp.Search {
	return chromedp.Search(`//fieldset[legend[normalize-space(.)="Language"]]//label[normalize-space(.)="` + title +
		`"]/input[@type="radio"]`)
}

// switchView is what the page shows of its language switch and of what follows it.
type switchView struct {
	Languages    []string `json:"languages"`    // the radios' labels, in order; none when the switch is hidden
	Chosen       string   `json:"chosen"`       // the checked radio's label
	Environments []string `json:"environments"` // the chooser's options; none when it is hidden
	Environment  string   `json:"environment"`  // its value, sent with each run
	Code         string   `json:"code"`         // the editor's text
	Example      string   `json:"example"`      // the editor's first text: Python's example
	Note         string   `json:"note"`         // the note under the switch, "" when hidden
	Curl         string   `json:"curl"`         // the curl snippet
}

// switchJS reads the switch by its legend, the fields by their labels.
const switchJS = `(() => {
 const f = [...document.querySelectorAll("fieldset")].find((f) => f.querySelector("legend").textContent.trim() === "Language");
 const radios = f && !f.hidden ? [...f.querySelectorAll('input[type="radio"]')] : [];
 const env = document.querySelector('select[aria-label="Environment"]');
 const code = [...document.querySelectorAll("label")].find((l) => l.textContent.trim() === "Code").control;
 const note = document.getElementById("lang-note");
 return { languages: radios.map((r) => r.closest("label").textContent.trim()),
  chosen: radios.filter((r) => r.checked).map((r) => r.closest("label").textContent.trim()).join(","),
  environments: env.closest("[hidden]") ? [] : [...env.options].map((o) => o.value), environment: env.value,
  code: code.value, example: code.defaultValue, note: note.hidden ? "" : note.textContent,
  curl: document.getElementById("snip-curl").textContent }; })()`

// waitSwitch waits until the switch offers languages (the page has read the service's
// OpenAPI document) and returns what the page shows.
func (p *page) waitSwitch(t *testing.T) switchView {
	t.Helper()
	p.do(t, "waiting for the language switch", chromedp.Poll[chromedp.Void](
		`document.querySelectorAll('fieldset:not([hidden]) input[type="radio"]').length > 0`,
		chromedp.WithPollingTimeout(30*time.Second)))
	return eval[switchView](t, p, switchJS)
}

// choose clicks the language titled title and returns what the page shows then.
func (p *page) choose(t *testing.T, title string) switchView {
	t.Helper()
	p.do(t, "choosing "+title, chromedp.Click(languageRadio(title)))
	return eval[switchView](t, p, switchJS)
}

// TestBrowserLanguages drives the language switch against a free sandboxd with the
// configured environments: it offers Python, JavaScript, TypeScript and Bash; each
// language loads its example, runs in node and shows its output; a TypeScript syntax
// error is the program's error; back in Python (from Bash's example) the Python example
// and environments return; the visitor's own text survives a switch (made with the
// keyboard) until they ask for the example; a session opens in the chosen language and
// closes when the language changes. A service configured to run less shows less.
func TestBrowserLanguages(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("browser-languages"), true, "SANDBOX_RUNTIME_TIMEOUT=5s")
	p := openPage(t, svc.URL, "")
	v := p.waitSwitch(t)
	if want := []string{"Python", "JavaScript", "TypeScript", "Bash"}; !slices.Equal(v.Languages, want) || v.Chosen != "Python" {
		t.Fatalf("the switch offers %v, %q chosen; want %v, Python chosen", v.Languages, v.Chosen, want)
	}
	if !slices.Equal(v.Environments, []string{"python", "data"}) || v.Environment != "python" {
		t.Errorf("Python's environments %v (%q), want python and data, python chosen", v.Environments, v.Environment)
	}
	for _, c := range []struct{ title, lang, marker, stdout string }{
		{"JavaScript", "javascript", "await wait(", "Hello, world!\nNode.js v24."},
		{"TypeScript", "typescript", "function norm(p: Point): number", "|(3, 4)| = 5\n|(5, 12)| = 13\n"},
		{"Bash", "bash", "printf 'b\\na\\nb\\n' | sort | uniq -c", "      1 a\n      2 b\nBash 5."},
	} {
		t.Run(c.lang, func(t *testing.T) {
			v := p.choose(t, c.title)
			if v.Chosen != c.title || !strings.Contains(v.Code, c.marker) || v.Note != "" {
				t.Fatalf("after choosing %s: %q chosen, note %q, code %q; want its example", c.title, v.Chosen, v.Note, v.Code)
			}
			if len(v.Environments) != 0 || v.Environment != "node" || !strings.Contains(v.Curl, `"language":"`+c.lang+`"`) {
				t.Errorf("%s: environments %v (%q), curl %q; want node alone (no chooser), the snippet in %s",
					c.title, v.Environments, v.Environment, v.Curl, c.lang)
			}
			a := p.run(t, c.lang)
			if a.Status != "ok" || !strings.HasPrefix(a.Stdout, c.stdout) {
				t.Errorf("%s's example: %+v, want ok and stdout starting %q", c.title, a, c.stdout)
			}
			p.phoneShot(t, c.lang)
		})
	}
	t.Run("back-to-python", func(t *testing.T) {
		v := p.choose(t, "Python")
		if v.Code != v.Example || !strings.Contains(v.Code, `print("Python", platform.python_version())`) {
			t.Errorf("back in Python the editor holds %q, want the Python example", v.Code)
		}
		if !slices.Equal(v.Environments, []string{"python", "data"}) || v.Environment != "python" {
			t.Errorf("back in Python: environments %v (%q), want python and data", v.Environments, v.Environment)
		}
		if a := p.run(t, "python"); a.Status != "ok" || !strings.HasPrefix(a.Stdout, "Hello, world!\nPython 3.11") {
			t.Errorf("the Python example: %+v", a)
		}
	})
	t.Run("typescript-syntax-error", func(t *testing.T) {
		p.choose(t, "TypeScript")
		p.typeCode(t, "let x: number = ;\n", "")
		a := p.run(t, "typescript-syntax-error")
		if a.Status != "error" || a.Exit != "1" || !strings.Contains(a.Stderr, `Unexpected ";"`) || !strings.Contains(a.Stderr, "main.ts:1") {
			t.Errorf("a TypeScript syntax error: %+v, want status error, exit 1 and esbuild's message on stderr", a)
		}
	})
	t.Run("own-text-kept", func(t *testing.T) { testOwnTextKept(t, p) })
	t.Run("session", func(t *testing.T) { testLanguageSession(t, p, svc.URL) })
	t.Run("configured-less", func(t *testing.T) {
		less := startService(t, instance("browser-languages-less"), false,
			"SANDBOX_ENVIRONMENTS_NODE_LANGUAGES=javascript,bash", "SANDBOX_ENVIRONMENTS_DATA_ENABLED=false")
		v := openPage(t, less.URL, "").waitSwitch(t)
		if want := []string{"Python", "JavaScript", "Bash"}; !slices.Equal(v.Languages, want) || len(v.Environments) != 0 {
			t.Errorf("node without typescript, no data: the switch offers %v, environments %v; want %v and no chooser",
				v.Languages, v.Environments, want)
		}
	})
}

// testOwnTextKept: with the visitor's own text in the editor (the TypeScript error), a
// switch made with the keyboard (an arrow key on the focused radio) keeps the text and
// says so; the note's button, pressed from the keyboard, loads the example.
func testOwnTextKept(t *testing.T, p *page) {
	p.choose(t, "TypeScript")
	p.typeCode(t, "console.log(6 * 7)", "")
	p.do(t, "an arrow key on the switch", chromedp.Focus(languageRadio("TypeScript")), chromedp.KeyEvent(kb.ArrowLeft))
	v := eval[switchView](t, p, switchJS)
	if v.Chosen != "JavaScript" || v.Code != "console.log(6 * 7)" || !strings.Contains(v.Note, "Your code is kept") {
		t.Fatalf("ArrowLeft from TypeScript with text of one's own: %q chosen, code %q, note %q; want JavaScript, the text kept, said",
			v.Chosen, v.Code, v.Note)
	}
	p.shot("own-text-kept")
	if a := p.run(t, "own-text-run"); a.Stdout != "42\n" {
		t.Errorf("the kept text run as JavaScript: %+v", a)
	}
	load := chromedp.Search(`//button[normalize-space(.)="Load the JavaScript example"]`)
	p.do(t, "loading the example from the keyboard", chromedp.Focus(load), chromedp.KeyEvent("\r"))
	if v := eval[switchView](t, p, switchJS); !strings.Contains(v.Code, "await wait(") || v.Note != "" {
		t.Errorf("after the note's button: code %q, note %q; want the JavaScript example, no note", v.Code, v.Note)
	}
}

// testLanguageSession: with "keep state between runs" on, the session opens in the
// chosen language (TypeScript, which node's default, JavaScript, would refuse; it keeps
// a top-level let), and choosing another language of the same environment closes it on
// the server.
func testLanguageSession(t *testing.T, p *page, base string) {
	p.choose(t, "TypeScript")
	p.do(t, "turning the switch on", chromedp.Click(keepSwitch))
	defer p.do(t, "turning the switch off", chromedp.Click(keepSwitch))
	p.runInSession(t, "let x: number = 41", "ts-session-first")
	a, sv := p.runInSession(t, "x + 1", "ts-session-42")
	if a.Status != "ok" || sv.Result != "42" || !strings.Contains(sv.Line, "TypeScript in node · 2 runs") {
		t.Fatalf("a TypeScript session: %+v %+v, want result 42 in a session of 2 runs in node", a, sv)
	}
	ids := p.sessionIDs()
	if len(ids) != 1 {
		t.Fatalf("sessions %v, want one", ids)
	}
	p.choose(t, "Bash")
	waitFor(10*time.Second, func() bool { return sessionStatus(t, base, ids[0]) == http.StatusNotFound })
	if got := sessionStatus(t, base, ids[0]); got != http.StatusNotFound {
		t.Errorf("after choosing Bash the TypeScript session answers %d, want 404", got)
	}
	if sv := eval[sessionView](t, p, sessionJS); !strings.Contains(sv.Line, "The TypeScript session") || !strings.Contains(sv.Line, "is closed") {
		t.Errorf("after choosing Bash the session line reads %q", sv.Line)
	}
}
