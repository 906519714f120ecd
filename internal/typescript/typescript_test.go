package typescript

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// mapPrefix starts the comment that carries the source map inside the output.
const mapPrefix = "//# sourceMappingURL=data:application/json;base64,"

// TestTranspile checks what the stub receives for each kind of program: the pieces the output must hold
// and those it must not, or for a syntax error the pieces of the diagnostics.
func TestTranspile(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		ok      bool
		want    []string // in js when ok, in diagnostics otherwise
		notWant []string // in js when ok, in diagnostics otherwise
	}{{
		name: "types stripped",
		src: "interface P { x: number }\ntype Q = P | null\n" +
			"function f(p: P, q?: Q): number { return (p.x as number)! }\n" +
			"const n: number = f({ x: 1 } satisfies P)\nlet g = <T,>(v: T): T[] => [v]\nconsole.log(n, g<string>(\"a\"))\n",
		ok:      true,
		want:    []string{"function f(p, q) {", "return p.x;", "const n = f({ x: 1 });", "let g = (v) => [v];", `g("a")`},
		notWant: []string{"interface", "type Q", ": number", "as number", "satisfies", "<T", "<string>", "q?"},
	}, {
		name:    "syntax error",
		src:     "let x: number = 1\nlet y z\n",
		want:    []string{"[ERROR]", `Expected ";" but found "z"`, "main.ts:2:6:", "let y z"},
		notWant: []string{"\x1b["},
	}, {
		name: "every error",
		src:  "let x = 1\nlet let = 3\nlet b: number = 'x' as\n",
		want: []string{`Cannot use "let" as an identifier here`, "main.ts:2:4:", "Unexpected end of file", "main.ts:4:0:"},
	}, {
		name: "early error",
		src:  "let a = 1\nlet a = 2\n",
		want: []string{`The symbol "a" has already been declared`, "main.ts:2:4:", "main.ts:1:4:"},
	}, {
		name: "unused import kept",
		src:  "import x from \"node:fs\"\nimport * as path from \"node:path\"\nconsole.log(1)\n",
		ok:   true,
		want: []string{`import x from "node:fs";`, `import * as path from "node:path";`},
	}, {
		name:    "import type dropped",
		src:     "import type { Stats } from \"node:fs\"\nimport { readFileSync, type Dirent } from \"node:fs\"\nlet s: Stats | Dirent | undefined\n",
		ok:      true,
		want:    []string{`import { readFileSync } from "node:fs";`, "let s;"},
		notWant: []string{"Stats", "Dirent", "import type"},
	}, {
		name: "decorators lowered",
		src: "function logged(m: any, c: ClassMethodDecoratorContext) { return m }\n" +
			"@((c: any) => c) class A { @logged hi() { return 1 } }\nconsole.log(new A().hi())\n",
		ok:      true,
		want:    []string{"__decorateElement(", "hi() {"},
		notWant: []string{"@logged", "@("},
	}, {
		name: "top-level await untouched",
		src:  "const v: number = await Promise.resolve(1)\nfor await (const x of [v]) console.log(x)\n",
		ok:   true,
		want: []string{"const v = await Promise.resolve(1);", "for await (const x of [v])"},
	}, {
		name: "enums and namespaces",
		src: "enum Color { Red, Green = \"g\" }\nnamespace Geo { export const pi = 3 }\n" +
			"console.log(Color.Red, Color[0], Geo.pi)\n",
		ok:      true,
		want:    []string{`Color2[Color2["Red"] = 0] = "Red";`, `Color2["Green"] = "g";`, "Geo2.pi = 3;", "Geo.pi"},
		notWant: []string{"enum ", "namespace "},
	}, {
		name: "empty program",
		src:  "",
		ok:   true,
	}, {
		name: "huge program",
		src:  program(200 << 10),
		ok:   true,
		want: []string{"class Shape0 {", fmt.Sprintf("class Shape%d {", len(program(200<<10))/blockSize-1)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, diagnostics, ok := Transpile(tt.src)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v; diagnostics:\n%s", ok, tt.ok, diagnostics)
			}
			got := diagnostics
			if ok {
				got = js
				if diagnostics != "" {
					t.Errorf("diagnostics = %q, want none when ok", diagnostics)
				}
				mustBeJavaScript(t, js)
				mustMapMainTS(t, js, tt.src)
			} else if js != "" {
				t.Errorf("js = %q, want none on a syntax error", js)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, clip(got))
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, clip(got))
				}
			}
		})
	}
}

// mustBeJavaScript fails unless esbuild parses js as plain JavaScript, which no TypeScript syntax is.
func mustBeJavaScript(tb testing.TB, js string) {
	tb.Helper()
	res := api.Transform(js, api.TransformOptions{Loader: api.LoaderJS, Format: api.FormatESModule})
	if len(res.Errors) > 0 {
		tb.Fatalf("output is not JavaScript:\n%s", strings.Join(api.FormatMessages(res.Errors, api.FormatMessagesOptions{}), ""))
	}
}

// mustMapMainTS fails unless js ends with an inline source map that names main.ts and holds src.
func mustMapMainTS(tb testing.TB, js, src string) {
	tb.Helper()
	i := strings.LastIndex(js, mapPrefix)
	if i < 0 {
		tb.Fatalf("no inline source map (%q) in:\n%s", mapPrefix, clip(js))
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(js[i+len(mapPrefix):]))
	if err != nil {
		tb.Fatalf("source map: %v", err)
	}
	var m struct {
		Version        int      `json:"version"`
		Sources        []string `json:"sources"`
		SourcesContent []string `json:"sourcesContent"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("source map: %v", err)
	}
	if src == "" {
		return // esbuild maps no source for an empty program
	}
	if m.Version != 3 || len(m.Sources) != 1 || m.Sources[0] != "main.ts" || len(m.SourcesContent) != 1 || m.SourcesContent[0] != src {
		tb.Fatalf("source map = version %d, sources %q, %d contents; want version 3 of main.ts with its source",
			m.Version, m.Sources, len(m.SourcesContent))
	}
}

// clip shortens s for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// blockSize is the length of each of program's blocks.
const blockSize = 512

// program is TypeScript of at least size bytes in blocks of blockSize bytes: types, a class, an enum and
// functions, numbered so that each block declares its own names.
func program(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		block := fmt.Sprintf("interface Point%[1]d { x: number; y: number }\n"+
			"enum Kind%[1]d { Circle, Square = \"sq\" }\n"+
			"class Shape%[1]d {\n  constructor(private readonly at: Point%[1]d, public kind: Kind%[1]d) {}\n"+
			"  area(scale: number = 1): number { return this.at.x * this.at.y * scale }\n}\n"+
			"export function make%[1]d(p: Partial<Point%[1]d>): Shape%[1]d {\n"+
			"  return new Shape%[1]d({ x: p.x ?? 0, y: p.y ?? 0 } as Point%[1]d, Kind%[1]d.Circle)\n}\n", i)
		b.WriteString(block)
		b.WriteString(strings.Repeat("/", blockSize-len(block)-1) + "\n")
	}
	return b.String()
}

// BenchmarkTranspile measures a small program and one of 60 KB, the host's cost per TypeScript job.
func BenchmarkTranspile(b *testing.B) {
	for _, bb := range []struct {
		name string
		src  string
	}{
		{"small", "const xs: number[] = [1, 2, 3]\nconsole.log(xs.map((x: number): number => x * 2))\n"},
		{"60KB", program(60 << 10)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.src)))
			for b.Loop() {
				if _, d, ok := Transpile(bb.src); !ok {
					b.Fatal(d)
				}
			}
		})
	}
}
