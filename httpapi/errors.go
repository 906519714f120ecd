package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"sandboxd"
)

// statusOf is the one mapping from error codes to HTTP statuses.
func statusOf(code sandboxd.Code) int {
	switch code {
	case sandboxd.CodeInvalid:
		return http.StatusBadRequest
	case sandboxd.CodeNotFound:
		return http.StatusNotFound
	case sandboxd.CodeMethod:
		return http.StatusMethodNotAllowed
	case sandboxd.CodeForbidden:
		return http.StatusForbidden
	case sandboxd.CodeConflict:
		return http.StatusConflict
	case sandboxd.CodeGone:
		return http.StatusGone
	case sandboxd.CodeTooSlow:
		return http.StatusRequestTimeout
	case sandboxd.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case sandboxd.CodeMediaType:
		return http.StatusUnsupportedMediaType
	case sandboxd.CodePayment:
		return http.StatusPaymentRequired
	case sandboxd.CodePending:
		return http.StatusAccepted
	case sandboxd.CodeBusy:
		return http.StatusTooManyRequests
	case sandboxd.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the JSON answer of every error.
type errorBody struct {
	Error string `json:"error"`
}

// writeError answers err with its status, headers and JSON body, and logs
// it: internal errors with their cause at error level (callers never see the
// cause), a pending settlement at warn level, the rest at debug level.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The caller hung up; nobody is left to read an answer.
		s.Log.Debug("caller went away", "path", logPath(r.URL.Path), "err", err)
		return
	}
	code := sandboxd.ErrorCode(err)
	status := statusOf(code)
	var body any = errorBody{Error: sandboxd.ErrorMessage(err)}
	setRetryAfter(w.Header(), err)
	var e *sandboxd.Error
	if errors.As(err, &e) && e.Payment != nil {
		body = addPayment(w.Header(), e, body)
	}
	if status == http.StatusPaymentRequired {
		noStore(w.Header())
	}
	log := s.Log.With("method", r.Method, "path", logPath(r.URL.Path), "status", status)
	switch {
	case status >= 500:
		log.Error("request failed", "err", err)
	case code == sandboxd.CodePending:
		log.Warn("run withheld: its settlement is pending", "err", err)
	default:
		log.Debug("request refused", "err", err)
	}
	writeJSONEscaped(w, status, body)
}

// setRetryAfter sets Retry-After in h when err says when to retry.
func setRetryAfter(h http.Header, err error) {
	var e *sandboxd.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(e.RetryAfter)))
	}
}

// retrySeconds is the one rounding of a retry delay to whole seconds (up),
// for the Retry-After header and the MCP tool's message.
func retrySeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
