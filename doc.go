// Package sandboxd holds the domain of the service: a job (a program to run),
// its result, the error type with its codes, and the interfaces at the seams
// (the runner, the admission gate, the payment gate). The packages that talk
// to the outside world (runtime for Docker, payments for x402 and the chain,
// httpapi for HTTP) depend on this package and never on each other, except
// cmd/sandboxd which wires them together.
package sandboxd
