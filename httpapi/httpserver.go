package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// Timeouts bound how long a connection may take over each part of a
// request, so slow or stuck clients cannot hold the server's resources.
type Timeouts struct {
	// ReadHeader bounds reading the request line and headers.
	ReadHeader time.Duration
	// Read bounds reading the whole request, body included.
	Read time.Duration
	// Write bounds reading the body, the handler and the answer, from the
	// end of the headers; it must exceed Read plus the longest handler:
	// queue wait, payment check, run and settlement (see DefaultTimeouts).
	Write time.Duration
	// Idle bounds a kept-alive connection between requests.
	Idle time.Duration
}

// writeMargin is added to the write deadline beyond the longest handler,
// for writing the answer itself.
const writeMargin = 10 * time.Second

// DefaultTimeouts returns the timeouts for handlers that take at most
// handler once the request's headers are read (for POST /v1/code: the
// queue wait, the payment check, the run and the settlement). The write
// deadline runs from the end of the headers, so it covers reading the body
// too: Read + handler + a margin. A shorter one would cut a paid answer off
// after its settlement, charging the payer for an EOF.
func DefaultTimeouts(handler time.Duration) Timeouts {
	t := Timeouts{
		ReadHeader: 10 * time.Second,
		Read:       30 * time.Second,
		Idle:       2 * time.Minute,
	}
	t.Write = t.Read + handler + writeMargin
	return t
}

// NewHTTPServer returns an http.Server for h with the timeouts and a 64 KiB
// header limit, logging its own errors (bad TLS, broken connections) at
// debug level.
func NewHTTPServer(h http.Handler, t Timeouts, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}
