package httpapi

import (
	"net/http"
	"strings"

	"sandboxd"
	"sandboxd/x402"
)

// codeRequest is the body of POST /v1/code.
type codeRequest struct {
	Language *string `json:"language"`
	Code     *string `json:"code"`
	Stdin    *string `json:"stdin"`
}

// CodeResponse is the answer of a delivered run, on HTTP and MCP alike: the
// JSON body of a 200 from POST /v1/code and the structured result of the
// MCP tool. Tests decode it through internal/servicetest.Answer.
type CodeResponse struct {
	Lang       string `json:"lang"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	Status     string `json:"status"`
	TimedOut   bool   `json:"timed_out"`
	OOMKilled  bool   `json:"oom_killed"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
	// CPUMS and MaxRSSKB are null when the program did not end by itself.
	CPUMS    *int64 `json:"cpu_ms"`
	MaxRSSKB *int64 `json:"max_rss_kb"`
}

// newCodeResponse is the answer of a delivered run of job.
func newCodeResponse(job sandboxd.Job, res sandboxd.Result) CodeResponse {
	resp := CodeResponse{
		Lang:       job.Language,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ExitCode:   res.ExitCode,
		Status:     string(res.Status),
		TimedOut:   res.TimedOut,
		OOMKilled:  res.OOMKilled,
		Truncated:  res.Truncated,
		DurationMS: res.Duration.Milliseconds(),
	}
	if u := res.Usage; u != nil {
		cpu, rss := u.CPU.Milliseconds(), u.MaxRSSKB
		resp.CPUMS, resp.MaxRSSKB = &cpu, &rss
	}
	return resp
}

// handleCode runs one program through the paid flow (execute) and answers
// its result with the settlement's report.
func (s *Server) handleCode(w http.ResponseWriter, r *http.Request) {
	job, err := s.parseJob(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ext := httpExtensions()
	out, err := s.execute(r.Context(), job, sandboxd.PaymentRequest{ResourceURL: resourceURL(r),
		Signature: r.Header.Get(x402.HeaderPaymentSignature), XPayment: r.Header.Get(x402.HeaderXPayment), Extensions: ext})
	if err != nil {
		s.writeError(w, r, withExtensions(err, ext))
		return
	}
	addSettlement(w.Header(), out.Settlement)
	writeJSON(w, http.StatusOK, newCodeResponse(job, out.Result))
}

// parseJob reads and decodes the request, then validates it into a Job.
func (s *Server) parseJob(r *http.Request) (sandboxd.Job, error) {
	body, err := readBody(r, s.MaxBodyBytes)
	if err != nil {
		return sandboxd.Job{}, err
	}
	var req codeRequest
	if err := decodeObject(body, &req); err != nil {
		return sandboxd.Job{}, err
	}
	return s.newJob(req)
}

// newJob validates a request (from HTTP or MCP) into a Job.
func (s *Server) newJob(req codeRequest) (sandboxd.Job, error) {
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
	job := sandboxd.Job{ID: newJobID(), Language: canonical, Code: *req.Code}
	if req.Stdin != nil {
		if len(*req.Stdin) > s.MaxStdinBytes {
			return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.validate",
				"stdin is %d bytes, over the limit of %d bytes", len(*req.Stdin), s.MaxStdinBytes)
		}
		job.Stdin = *req.Stdin
	}
	return job, nil
}
