package payments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd/internal/jsonkeys"
)

// maxAnswerHeaderBytes bounds the headers of an answer of the RPC node or
// the facilitator (Go's default is 10 MB); theirs are a few hundred bytes.
const maxAnswerHeaderBytes = 64 << 10

// maxRPCAnswer bounds one answer of the RPC node. The largest the service
// asks for is a transaction receipt with its two Transfer and
// AuthorizationUsed logs, a few KB; a node streaming more is refused
// rather than buffered for as long as the call's timeout lets it talk.
const maxRPCAnswer = 4 << 20

// readAnswer reads the body of an answer of a service this one depends on
// (the RPC node, the facilitator): at most limit bytes, and JSON nested at
// most jsonkeys.MaxDepth. A longer or deeper answer is an error, not a
// truncated read, so it cannot pass for another answer. Reading is bounded
// in time by the request's context.
func readAnswer(body io.Reader, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the answer is over the limit of %d bytes", limit)
	}
	if e := jsonkeys.CheckDepth(raw, jsonkeys.MaxDepth); e != nil {
		return nil, fmt.Errorf("the answer is refused: %s", e.Describe(""))
	}
	return raw, nil
}

// answerTransport is a transport for calls to the RPC node and the
// facilitator, with their answers' headers bounded.
func answerTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = maxAnswerHeaderBytes
	return t
}

// boundedTransport reads every answer's body whole through readAnswer
// before its caller sees it; go-ethereum's RPC client would otherwise
// read a node's answer, or its error page, without a size limit.
type boundedTransport struct {
	base  http.RoundTripper
	limit int64
}

// RoundTrip makes the call, then reads and bounds the answer's body.
func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := readAnswer(resp.Body, t.limit)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	return resp, nil
}

// dialRPC connects to the node at url with every answer bounded: over
// HTTP by boundedTransport, over WebSocket by the message size limit.
func dialRPC(ctx context.Context, url string) (*ethclient.Client, error) {
	hc := &http.Client{Transport: boundedTransport{base: answerTransport(), limit: maxRPCAnswer}}
	c, err := rpc.DialOptions(ctx, url, rpc.WithHTTPClient(hc), rpc.WithWebsocketMessageSizeLimit(maxRPCAnswer))
	if err != nil {
		return nil, err
	}
	return ethclient.NewClient(c), nil
}
