package httpapi

import (
	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/internal/jsonkeys"
)

// The bounds of the scan that runs ahead of every decoder (jsonkeys.Scan).
// A request holds a handful of fields and one array, "files"; so a wide
// array, a wide object or a swarm of tiny values is refused after a few
// bytes of it, before any decoder builds a thing.
const (
	// requestKeys bounds the keys of one object of a request: the body has
	// five fields, a file two.
	requestKeys = 16
	// rpcItems and rpcKeys bound the arrays and objects of an MCP
	// message: its envelope, the client's capabilities and _meta hold a
	// few dozen at most.
	rpcItems = 64
	rpcKeys  = 64
	// rpcValues bounds the values of one MCP message: the envelope and a
	// payment in _meta hold about 40, the arguments at most
	// requestValues, which is smaller at any sane max_files.
	rpcValues = 1024
)

// The shapes of a request, as Go's decoder reads them into codeRequest
// and toolInput: the scan refuses an unknown field, so the decoder need
// not (json.Unmarshal reads the body in place; a json.Decoder, which
// could refuse it, first copies the body into buffers it grows).
var (
	filesShape   = jsonkeys.ArrayOf(jsonkeys.Closed(map[string]*jsonkeys.Shape{"name": nil, "content": nil}))
	requestShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{"language": nil, "code": nil, "stdin": nil,
		"environment": nil, "files": filesShape})
	openShape  = jsonkeys.Closed(map[string]*jsonkeys.Shape{"language": nil, "environment": nil})
	closeShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{"session_id": nil})
	toolShape  = jsonkeys.Closed(map[string]*jsonkeys.Shape{"code": nil, "stdin": nil, "environment": nil,
		"files": filesShape})
	sessionToolShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{"code": nil, "stdin": nil, "environment": nil,
		"files": filesShape, "session_id": nil})
)

// requestLimits are the bounds of a POST /v1/code body, which are also
// those of a run tool's arguments: no array but "files", of at
// most MaxFiles items. A string is bounded by the body's cap only: one
// string costs a decoder once its size, and newJob checks each field's own
// cap on what it decodes to, with a message naming the field's key.
func (s *Server) requestLimits(shape *jsonkeys.Shape) jsonkeys.Limits {
	return jsonkeys.Limits{
		Depth:  jsonkeys.MaxDepth,
		Items:  s.MaxFiles,
		Keys:   requestKeys,
		Values: requestValues(s.MaxFiles),
		String: int(s.MaxBodyBytes),
		Arrays: []jsonkeys.Bound{{Path: "files", Max: s.MaxFiles, Name: "max_files"}},
		Fields: shape,
	}
}

// rpcLimits are the bounds of an MCP message (or batch) as the MCP guard
// reads it (mcpService.Read), arguments included. A run tool's arguments
// are scanned again, within the request's bounds, by decodeToolArgs: a
// call over them, such as too many files, is a tool error the model can
// read, not a refused message.
func (s *Server) rpcLimits() jsonkeys.Limits {
	return jsonkeys.Limits{
		Depth:  jsonkeys.MaxDepth,
		Items:  rpcItems,
		Keys:   rpcKeys,
		Values: mcptools.MaxBatch * rpcValues,
		String: int(s.MaxBodyBytes),
		Arrays: []jsonkeys.Bound{{Path: "", Max: mcptools.MaxBatch, Name: "batch"}},
	}
}

// requestValues is the most values a request with maxFiles files holds:
// the body, its five fields and their values, and three per file, with
// room to spare (and for a refusal of depth to come before this one).
func requestValues(maxFiles int) int { return 64 + 4*maxFiles }

// scanRefusal is the error of a document refused by the scan, op naming
// the reader and what the document it is: a size cap broken (a named
// bound, such as max_files, or a string) is CodeTooLarge, any other bound
// CodeInvalid. A syntax error is nil: the decoder that reads next
// describes it in its terms.
func scanRefusal(e *jsonkeys.Error, op, what string) error {
	switch {
	case e == nil || e.Kind == jsonkeys.Syntax:
		return nil
	case e.Kind == jsonkeys.Duplicate:
		return sandboxd.Errorf(sandboxd.CodeInvalid, op, "field %q appears more than once", e.Key)
	case e.Kind == jsonkeys.TooLong || (e.Kind == jsonkeys.TooMany && e.Bound != ""):
		return sandboxd.Errorf(sandboxd.CodeTooLarge, op, "%s refused: %s", what, e.Describe("the top object"))
	}
	return sandboxd.Errorf(sandboxd.CodeInvalid, op, "%s refused: %s", what, e.Describe("the top object"))
}
