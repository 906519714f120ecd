package x402

// The unexported names that the external tests (package x402_test, which
// use the fixtures of x402/x402test) check. This file is compiled only
// into the tests.

// MaxHeaderBytes is maxHeaderBytes.
const MaxHeaderBytes = maxHeaderBytes

// The reject reasons that Verify gives and the tests expect.
const (
	// ReasonInvalidVersion is reasonInvalidVersion.
	ReasonInvalidVersion = reasonInvalidVersion
	// ReasonUnsupportedScheme is reasonUnsupportedScheme.
	ReasonUnsupportedScheme = reasonUnsupportedScheme
	// ReasonInvalidNetwork is reasonInvalidNetwork.
	ReasonInvalidNetwork = reasonInvalidNetwork
	// ReasonInvalidPayload is reasonInvalidPayload.
	ReasonInvalidPayload = reasonInvalidPayload
	// ReasonRecipientMismatch is reasonRecipientMismatch.
	ReasonRecipientMismatch = reasonRecipientMismatch
	// ReasonMissingDomain is reasonMissingDomain.
	ReasonMissingDomain = reasonMissingDomain
)

// ParseAuthorization is parseAuthorization.
var ParseAuthorization = parseAuthorization

// TransferDigest is transferDigest.
var TransferDigest = transferDigest
