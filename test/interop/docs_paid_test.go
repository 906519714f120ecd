package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docsPaidURL is the URL the documentation's paid examples call.
const docsPaidURL = "https://sandbox.example.com/v1/code"

// TestDocsPaying runs the paying examples of the README and docs/payments.md, as written
// but for the URL, against a service that settles on a local chain: the `sandboxd call`
// line and the official client's JavaScript (`@x402/fetch`), each paying for print(6*7)
// and getting 42 back.
func TestDocsPaying(t *testing.T) {
	mustInterop(t)
	c, modeEnv := startMode(t, "onchain", nil)
	svc := startService(t, instance("docs-paid"), true, paymentEnv(modeEnv)...)
	url := svc.URL + "/v1/code"
	for _, s := range []struct{ page, call, js string }{
		{"README.md", "## Paying", "## Paying"},
		{filepath.Join("docs", "payments.md"), "## With `sandboxd call`", "## Over HTTP"},
	} {
		t.Run(s.page, func(t *testing.T) {
			testDocsPaying(t, c, url, pageSection(t, s.page, s.call), pageSection(t, s.page, s.js))
		})
	}
}

// testDocsPaying runs the `sandboxd call` line of one section and the JavaScript of
// another against url.
func testDocsPaying(t *testing.T, c *chain, url, callSection, jsSection string) {
	section := callSection
	t.Run("sandboxd call", func(t *testing.T) {
		before := snapshot(t, c)
		line := fencedLine(t, section, "bin/sandboxd call ")
		args := shellWords(t, strings.Replace(line, docsPaidURL, url, 1))
		args = slices.Replace(args, 0, 1, binary)
		args = replaceArg(t, args, "--key-file", writeKey(t, "payer.key", payer.key))
		out := runCommand(t, nil, args...)
		if !strings.Contains(out, "HTTP 200") || !strings.Contains(out, `"stdout": "42\n"`) {
			t.Errorf("sandboxd call printed %.500s; want HTTP 200 and 42", out)
		}
		expectMoved(t, c, before, payer.address)
	})
	t.Run("@x402/fetch", func(t *testing.T) {
		before := snapshot(t, c)
		js := fencedBlock(t, jsSection, "```js")
		out := runSnippet(t, strings.Replace(js, docsPaidURL, url, 1))
		var got struct {
			Status  int            `json:"status"`
			Paid    bool           `json:"paid"`
			Answer  map[string]any `json:"answer"`
			Refusal string         `json:"refusal"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("the snippet printed %q: %v", out, err)
		}
		if got.Status != 200 || !got.Paid || got.Answer["stdout"] != "42\n" {
			t.Errorf("the snippet's call: %+v; want 200, a PAYMENT-RESPONSE and 42", got)
		}
		expectMoved(t, c, before, payer.address)
	})
}

// pageSection is the section of page under heading, up to the next "## ".
func pageSection(t testing.TB, page, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), page))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", page, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// fencedLine is the line of section that starts with prefix.
func fencedLine(t testing.TB, section, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("the section has no line starting %q", prefix)
	return ""
}

// fencedBlock is the code of the first fenced block of section opened by fence.
func fencedBlock(t testing.TB, section, fence string) string {
	t.Helper()
	_, rest, ok := strings.Cut(section, fence+"\n")
	if !ok {
		t.Fatalf("the section has no %s block", fence)
	}
	code, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("the %s block is not closed", fence)
	}
	return code
}

// replaceArg is args with the value after flag replaced by value.
func replaceArg(t testing.TB, args []string, flag, value string) []string {
	t.Helper()
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			args[i+1] = value
			return args
		}
	}
	t.Fatalf("%q has no %s", args, flag)
	return nil
}

// runSnippet runs the README's JavaScript as an ES module beside test/interop's
// node_modules, with `account` the payer's viem account (and, when env sets RPC_URL,
// `publicClient` a viem client of that chain), and returns what it reports of the answer
// as JSON: its status, whether it carried PAYMENT-RESPONSE, and its body.
func runSnippet(t testing.TB, js string, env ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp(interopDir, ".docs-snippet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	src := `import { privateKeyToAccount } from "viem/accounts";
import { createPublicClient as docsPublicClient, http as docsHTTP } from "viem";
const account = privateKeyToAccount(process.env.PAYER_KEY);
const publicClient = process.env.RPC_URL ? docsPublicClient({ transport: docsHTTP(process.env.RPC_URL) }) : null;
` + js + `
const text = await res.text();
let answer = null;
try { answer = JSON.parse(text); } catch {}
console.log(JSON.stringify({ status: res.status, paid: res.headers.has("PAYMENT-RESPONSE"), answer,
  refusal: res.status === 200 ? "" : text }));
`
	file := filepath.Join(dir, "readme.mjs")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(runCommand(t, append([]string{"PAYER_KEY=" + payer.key}, env...), "node", file))
}

// runCommand runs argv with env added, within a minute, and returns its stdout; a failure
// fails the test with its output.
func runCommand(t testing.TB, env []string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", filepath.Base(argv[0]), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
