package runtime

import (
	"context"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/internal/testenv"
)

// A session in the data image: the preload is done before the first call,
// the state is a DataFrame, and each call's figures come back.

func TestSessionData(t *testing.T) {
	for _, oci := range ociRuntimes {
		for _, m := range modes {
			t.Run(oci+"/"+m.name, func(t *testing.T) {
				d := mustDocker(t, dataConfig, func(c *Config) { c.OCIRuntime, c.PoolSize = oci, m.pool })
				s := mustSession(t, d)
				csv := sandboxd.File{Name: "sales.csv", Content: []byte("month,sales\nJan,120\nFeb,95\nMar,180\n")}
				res := mustCall(t, s, "import pandas as pd\ndf = pd.read_csv('sales.csv')\nlen(df)", csv)
				if valueOf(res) != "3" || len(res.Files) != 0 {
					t.Fatalf("load: value %s files %d stderr %q", valueOf(res), len(res.Files), res.Stderr)
				}
				for n, code := range []string{
					"import matplotlib.pyplot as plt\ndf.plot.bar(x='month', y='sales')\nplt.show()\nint(df.sales.sum())",
					"df['double'] = df.sales * 2\ndf.plot(x='month', y='double')\nint(df.double.max())",
				} {
					res := mustCall(t, s, code)
					want := []string{"395", "360"}[n]
					name := []string{"figure-1.png", "figure-2.png"}[n]
					if valueOf(res) != want || len(res.Files) != 1 || res.Files[0].Name != name ||
						!strings.HasPrefix(string(res.Files[0].Content), "\x89PNG") {
						t.Fatalf("call %d: value %s files %v stderr %q", n, valueOf(res), fileNames(res.Files), res.Stderr)
					}
				}
			})
		}
	}
}

// fileNames lists the files' names.
func fileNames(files []sandboxd.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func TestSessionEnvironments(t *testing.T) {
	es := mustEnvironments(t, testInstance+"-sessions", 1<<30, [2]string{"python", testImage}, [2]string{"data", testenv.DataImage()})
	if _, err := es.Reap(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", "python", "data"} {
		d := es.docker(map[string]string{"": "python"}[env] + env)
		settle(t, d)
		held := d.pool.budget.used()
		sc, err := es.OpenSession(t.Context(), env, sandboxd.LanguagePython)
		if err != nil {
			t.Fatalf("%q: %v", env, err)
		}
		s := sc.(*Session)
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		res := mustCall(t, s, "import importlib.util\nimportlib.util.find_spec('pandas') is not None")
		if want := map[string]string{"data": "True"}[env]; valueOf(res) != want && !(want == "" && valueOf(res) == "False") {
			t.Errorf("%q: pandas there: %s", env, valueOf(res))
		}
		// The taken container left the pools' budget; its replacement is
		// counted instead.
		settle(t, d)
		if got := d.pool.budget.used(); got != held {
			t.Errorf("%q: the pools hold %d bytes after the take, %d before", env, got, held)
		}
	}
	if _, err := es.OpenSession(t.Context(), "gpu", sandboxd.LanguagePython); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Errorf("unknown environment: %v", err)
	}
}
