// Package typescript turns TypeScript into the JavaScript the Node stub
// runs, on the host, before a program reaches a container: transpiled,
// not type-checked.
package typescript

// Transpile turns a program into the JavaScript the stub runs, with its source map inline; ok false
// means a syntax error, described in diagnostics as esbuild prints it.
func Transpile(src string) (js, diagnostics string, ok bool) {
	return "", "not implemented", false
}
