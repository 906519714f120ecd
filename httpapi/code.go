package httpapi

import (
	"net/http"
	"strings"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/x402"
)

// codePath is the path of one-shot runs.
const codePath = "/v1/code"

// codeRequest is the body of POST /v1/code.
type codeRequest struct {
	Language    *string       `json:"language"`
	Code        *string       `json:"code"`
	Stdin       *string       `json:"stdin"`
	Environment *string       `json:"environment"`
	Files       []fileRequest `json:"files"`
}

// handleCode runs one program through the paid flow (execute) and answers
// its result, as rendered before the settlement, with the settlement's
// report; a retry of a request already answered gets the stored answer
// (answerReplay).
func (s *Server) handleCode(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	ctx, phases := s.withPhases(r.Context())
	r = r.WithContext(ctx)
	job, hold, err := s.parseJob(w, r)
	defer hold.Release()
	phases.Since(sandboxd.PhaseRead, began)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ext := s.httpExtensions()
	ctx = ingress.WithHold(r.Context(), hold)
	out, err := s.execute(ctx, job, s.httpPayment(r, codePath, job.Environment, ext))
	if rep := replayOf(err); rep != nil {
		s.answerReplay(ctx, w, r, rep)
		return
	}
	addServerTiming(w.Header(), phases)
	if err != nil {
		s.writeError(w, r, withExtensions(err, ext))
		return
	}
	addSettlement(w.Header(), out.Settlement)
	out.Answer.write(w, phases)
}

// httpPayment is the payment request of a paid HTTP route: its resource
// (path, the route's template), the request's payment headers, the
// environment it is priced at and the extensions declared for it.
func (s *Server) httpPayment(r *http.Request, path, env string, ext map[string]any) sandboxd.PaymentRequest {
	return sandboxd.PaymentRequest{ResourceURL: s.resourceURL(r, path), Signature: r.Header.Get(x402.HeaderPaymentSignature),
		XPayment: r.Header.Get(x402.HeaderXPayment), Environment: env, Extensions: ext, Transport: sandboxd.TransportHTTP}
}

// parseJob reads and decodes the request, then validates it into a Job.
// It returns the body's room in the body budget, which the job keeps
// until its run is admitted (execute); the caller releases it.
func (s *Server) parseJob(w http.ResponseWriter, r *http.Request) (sandboxd.Job, *ingress.Hold, error) {
	body, hold, err := s.readBody(w, r, s.MaxBodyBytes)
	if err != nil {
		return sandboxd.Job{}, nil, err
	}
	var req codeRequest
	if err := decodeObject(body, s.requestLimits(requestShape), &req); err != nil {
		return sandboxd.Job{}, hold, err
	}
	job, err := s.newJob(req)
	return job, hold, err
}

// newJob validates a request (from HTTP or MCP) into a Job.
func (s *Server) newJob(req codeRequest) (sandboxd.Job, error) {
	lang, env, err := s.resolve(req.Language, req.Environment)
	if err != nil {
		return sandboxd.Job{}, err
	}
	if req.Code == nil || strings.TrimSpace(*req.Code) == "" {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "code" is missing or empty; send the program's source as a string`)
	}
	if len(*req.Code) > s.MaxCodeBytes {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.validate",
			"code is %d bytes, over the limit of %d bytes", len(*req.Code), s.MaxCodeBytes)
	}
	job := sandboxd.Job{ID: newJobID(), Language: lang, Code: *req.Code, Environment: env}
	if req.Stdin != nil {
		if len(*req.Stdin) > s.MaxStdinBytes {
			return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.validate",
				"stdin is %d bytes, over the limit of %d bytes", len(*req.Stdin), s.MaxStdinBytes)
		}
		job.Stdin = *req.Stdin
	}
	if job.Files, err = newFiles(req.Files, s.MaxFiles, s.MaxFilesBytes); err != nil {
		return sandboxd.Job{}, err
	}
	return job, nil
}
