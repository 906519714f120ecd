package supervisor

import "strconv"

// nodeStubPath is where the images keep the JavaScript stub
// (images/node/stub.js, with node-rewrite.js beside it).
const nodeStubPath = "/opt/sandbox/stubs/node.js"

// nodeStack is a Node stub's stack limit: glibc sizes every thread's stack
// by it, and the data limit counts them (libuv's pool, V8's workers).
const nodeStack = 2 << 20

// nodeStub is JavaScript's entry in Stubs (and TypeScript's: the host
// transpiles it, so both run on one warm stub) for the stub at path. V8's
// heap is capped below the data limit (nodeHeapMiB), so a heap bomb ends
// with V8's own message before a failed mmap; one V8 worker and two libuv
// threads, since a run gets one CPU and each thread's stack counts.
func nodeStub(path string) Stub {
	return Stub{
		Name: "node",
		Argv: func(l Limits, _ bool) []string {
			argv := []string{"/usr/bin/node"}
			if l.Data > 0 {
				argv = append(argv, "--max-old-space-size="+strconv.FormatInt(nodeHeapMiB(l.Data), 10))
			}
			return append(argv, "--v8-pool-size=1", path)
		},
		Env:   []string{"UV_THREADPOOL_SIZE=2"},
		Stack: nodeStack,
		Warm:  true,
	}
}

// nodeHeapMiB is V8's old-space limit for a data limit of data bytes:
// three quarters of what is left after a warm stub's own 16 MiB of
// anonymous memory, at least 16. The quarter left is for Buffers and typed
// arrays, which live outside V8's heap and meet the data limit instead.
func nodeHeapMiB(data int64) int64 {
	const mib = 1 << 20
	return max(16, (data/mib-16)*3/4)
}
