package httpapi

import (
	"net/http"
	"strings"

	"sandboxd"
)

// codeRequest is the body of POST /v1/code.
type codeRequest struct {
	Language *string `json:"language"`
	Code     *string `json:"code"`
}

// codeResponse is the answer of a delivered run.
type codeResponse struct {
	Lang       string `json:"lang"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	Status     string `json:"status"`
	TimedOut   bool   `json:"timed_out"`
	OOMKilled  bool   `json:"oom_killed"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
}

// handleCode runs one program through the payment flow (execute) and
// answers its result.
func (s *Server) handleCode(w http.ResponseWriter, r *http.Request) {
	job, err := s.parseJob(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.execute(r.Context(), job, sandboxd.PaymentRequest{ResourceURL: resourceURL(r), Header: r.Header})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for k, vs := range out.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	res := out.Result
	s.Log.Info("run delivered", "job", job.ID, "status", res.Status, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds())
	writeJSON(w, http.StatusOK, codeResponse{
		Lang:       job.Language,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ExitCode:   res.ExitCode,
		Status:     string(res.Status),
		TimedOut:   res.TimedOut,
		OOMKilled:  res.OOMKilled,
		Truncated:  res.Truncated,
		DurationMS: res.Duration.Milliseconds(),
	})
}

// parseJob reads, decodes and validates the request into a Job.
func (s *Server) parseJob(r *http.Request) (sandboxd.Job, error) {
	body, err := readBody(r, s.MaxBodyBytes)
	if err != nil {
		return sandboxd.Job{}, err
	}
	var req codeRequest
	if err := decodeObject(body, &req); err != nil {
		return sandboxd.Job{}, err
	}
	lang := ""
	if req.Language != nil {
		lang = strings.ToLower(strings.TrimSpace(*req.Language))
	}
	canonical, ok := sandboxd.NormalizeLanguage(lang)
	if !ok {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			"language %q is not supported; use one of: %s", lang, strings.Join(sandboxd.SupportedLanguages, ", "))
	}
	if req.Code == nil || strings.TrimSpace(*req.Code) == "" {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "code" is missing or empty; send the program's source as a string`)
	}
	if len(*req.Code) > s.MaxCodeBytes {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.validate",
			"code is %d bytes, over the limit of %d bytes", len(*req.Code), s.MaxCodeBytes)
	}
	return sandboxd.Job{ID: newJobID(), Language: canonical, Code: *req.Code}, nil
}
