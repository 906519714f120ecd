// Package sandboxd holds the domain of the service: a job (a program to run),
// its result, the error type with its codes, and the interfaces at the seams
// (the runner, the admission gate, the payment gate). The packages that talk
// to the outside world (runtime for Docker, payments for the payment gate,
// its ledger and the chain, httpapi for HTTP) depend on this package and
// never on each other. x402, the wire protocol, depends on none of them
// (only on internal/jsonkeys), and httpapi and payments read and write its
// types; metrics observes the payment packages it counts; what several
// packages share lives under internal/; cmd/sandboxd wires them together.
package sandboxd
