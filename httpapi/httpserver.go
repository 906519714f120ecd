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
	// Write bounds the handler and the answer; it must exceed the run's
	// timeout plus settlement.
	Write time.Duration
	// Idle bounds a kept-alive connection between requests.
	Idle time.Duration
}

// DefaultTimeouts returns the timeouts for a run limit of runTimeout.
func DefaultTimeouts(runTimeout time.Duration) Timeouts {
	return Timeouts{
		ReadHeader: 10 * time.Second,
		Read:       30 * time.Second,
		Write:      runTimeout + 2*time.Minute,
		Idle:       2 * time.Minute,
	}
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
