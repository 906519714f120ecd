package httpapi

import (
	"encoding/json"
	"net/http"

	"sandboxd"
	"sandboxd/x402"
)

// channelPath answers x402 batch-settlement refunds: the official client's
// refund asks GET on a URL for the terms (402), then sends its refund
// payload there. It runs nothing.
const channelPath = "/v1/channel"

// refundBody is the answer of a refund.
type refundBody struct {
	Refund refundReport `json:"refund"`
}

// refundReport says what a refund paid back.
type refundReport struct {
	// ChannelID is the channel refunded.
	ChannelID string `json:"channel_id"`
	// Amount is what was paid back, in atomic units.
	Amount string `json:"amount"`
	// Transaction is the refund's transaction.
	Transaction string `json:"transaction"`
}

// handleChannel answers GET /v1/channel: without a payment the terms
// (402); with a batch-settlement refund payload the refund, carried out
// before the answer (200 with PAYMENT-RESPONSE); with anything else a 400
// that says where runs are paid.
func (s *Server) handleChannel(w http.ResponseWriter, r *http.Request) {
	auth, err := s.Gate.Check(r.Context(), sandboxd.PaymentRequest{ResourceURL: s.resourceURL(r, channelPath),
		Signature: r.Header.Get(x402.HeaderPaymentSignature), XPayment: r.Header.Get(x402.HeaderXPayment), Operations: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if auth.Payer() == "" {
		s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeNotFound, "httpapi.channel",
			"payments are off here: there are no channels to refund"))
		return
	}
	op, ok := auth.(sandboxd.PaymentOperation)
	if !ok {
		s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.channel",
			"GET %s takes a batch-settlement refund payload only; nothing was charged. Pay for runs at POST %s", channelPath, codePath))
		return
	}
	st, err := op.Operate(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	addSettlement(w.Header(), st)
	var extra struct {
		ChannelState struct {
			ChannelID string `json:"channelId"`
		} `json:"channelState"`
	}
	_ = json.Unmarshal(st.Extra, &extra)
	writeJSON(w, http.StatusOK, refundBody{refundReport{ChannelID: extra.ChannelState.ChannelID, Amount: st.Amount,
		Transaction: st.Transaction}})
}
