// Package typescript turns a TypeScript program into the JavaScript the node stub runs. It only strips
// types and lowers what Node cannot parse: nothing is type-checked, bundled or resolved, so an import or a
// top-level await reaches the stub as written.
package typescript

import (
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Transpile turns a program into the JavaScript the stub runs, with its source map inline; ok false
// means a syntax error, described in diagnostics as esbuild prints it.
//
// A syntax error here is whatever esbuild refuses, which includes early errors Node would also raise as a
// SyntaxError (a name declared twice, an undeclared private name). diagnostics is empty when ok is true:
// warnings are not the program's output. Otherwise it holds every error esbuild found, each with its place
// as main.ts:LINE:COL (COL counts from 0, as esbuild's do) and the line, without terminal colors.
func Transpile(src string) (js, diagnostics string, ok bool) {
	res := api.Transform(src, api.TransformOptions{
		Loader: api.LoaderTS,
		// Sourcefile names the program in diagnostics and in the source map, so a stack frame reads main.ts.
		Sourcefile: "main.ts",
		// The node image's Node: what it parses passes through, what it cannot (decorators) is lowered.
		Engines:   []api.Engine{{Name: api.EngineNode, Version: "24"}},
		Sourcemap: api.SourceMapInline,
		// verbatimModuleSyntax keeps an import that this program never uses (a session's next call may),
		// and drops `import type`, which names nothing at run time.
		TsconfigRaw: `{"compilerOptions":{"verbatimModuleSyntax":true}}`,
	})
	if len(res.Errors) > 0 {
		msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return "", strings.Join(msgs, ""), false
	}
	return string(res.Code), "", true
}
