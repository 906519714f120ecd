package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"sandboxd"
)

// headerServerTiming is the W3C Server-Timing header: the answer's phases
// up to its writing, so a caller (and the bench) sees where its time went.
const headerServerTiming = "Server-Timing"

// withPhases returns ctx carrying a new recorder of its answer's phases
// (each handed to ObservePhase as it is added), and the recorder.
func (s *Server) withPhases(ctx context.Context) (context.Context, *sandboxd.Phases) {
	p := sandboxd.NewPhases(s.ObservePhase)
	return sandboxd.WithPhases(ctx, p), p
}

// addServerTiming sets the Server-Timing header to the phases recorded so
// far, each as name;dur=milliseconds (a phase recorded twice, such as a
// second start after a container that died, is listed twice).
func addServerTiming(h http.Header, p *sandboxd.Phases) {
	spans := p.Spans()
	if len(spans) == 0 {
		return
	}
	parts := make([]string, len(spans))
	for i, sp := range spans {
		parts[i] = fmt.Sprintf("%s;dur=%.3f", sp.Phase, float64(sp.Duration.Microseconds())/1000)
	}
	h.Set(headerServerTiming, strings.Join(parts, ", "))
}
