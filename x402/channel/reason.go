package channel

// The x402 error codes of the official batch-settlement implementation
// (@x402/evm's batch-settlement errors) that this package answers with.
// ReasonCumulativeMismatch and ReasonBelowClaimed are the two codes after
// which the official client reads the corrective 402 and retries, so they
// must travel bare in PaymentRequired.error.
const (
	// ReasonPayloadType: the payload's type is not one a payer may send.
	ReasonPayloadType = "invalid_batch_settlement_evm_payload_type"
	// ReasonChannelIDMismatch: the voucher's channelId is not the config's id.
	ReasonChannelIDMismatch = "invalid_batch_settlement_evm_channel_id_mismatch"
	// ReasonReceiverMismatch: the config pays another receiver than payTo.
	ReasonReceiverMismatch = "invalid_batch_settlement_evm_receiver_mismatch"
	// ReasonReceiverAuthorizerMismatch: the config names another receiver
	// authorizer than the terms (or the terms name none).
	ReasonReceiverAuthorizerMismatch = "invalid_batch_settlement_evm_receiver_authorizer_mismatch"
	// ReasonTokenMismatch: the config names another token than the asset.
	ReasonTokenMismatch = "invalid_batch_settlement_evm_token_mismatch"
	// ReasonWithdrawDelayMismatch: the config's withdraw delay is not the
	// terms'.
	ReasonWithdrawDelayMismatch = "invalid_batch_settlement_evm_withdraw_delay_mismatch"
	// ReasonVoucherSignature: the voucher is not signed by the config's
	// payer authorizer over this channel and amount (or is malformed, or
	// the authorizer is zero).
	ReasonVoucherSignature = "invalid_batch_settlement_evm_voucher_signature"
	// ReasonCumulativeMismatch: the running total is not the charged total
	// plus the price; the corrective 402 says the charged total.
	ReasonCumulativeMismatch = "invalid_batch_settlement_evm_cumulative_amount_mismatch"
	// ReasonBelowClaimed: the running total is not above what the escrow
	// already paid out to the receiver.
	ReasonBelowClaimed = "invalid_batch_settlement_evm_cumulative_below_claimed"
	// ReasonExceedsBalance: the running total is above what the channel
	// holds for the receiver (balance less a pending withdrawal).
	ReasonExceedsBalance = "invalid_batch_settlement_evm_cumulative_exceeds_balance"
	// ReasonValidBefore: the deposit's authorization expired or expires
	// within 6 s.
	ReasonValidBefore = "invalid_batch_settlement_evm_payload_authorization_valid_before"
	// ReasonValidAfter: the deposit's authorization is not valid yet.
	ReasonValidAfter = "invalid_batch_settlement_evm_payload_authorization_valid_after"
	// ReasonReceiveSignature: the deposit's authorization is not signed by
	// the payer over this deposit.
	ReasonReceiveSignature = "invalid_batch_settlement_evm_receive_authorization_signature"
	// ReasonMissingDomain: the asset's EIP-712 name or version is unknown.
	ReasonMissingDomain = "invalid_batch_settlement_evm_missing_eip712_domain"
	// ReasonRefundAmount: the refund amount asked for is zero.
	ReasonRefundAmount = "invalid_batch_settlement_evm_refund_amount_invalid"
)

// The codes of the escrow's refusals of the seller's own transactions
// (payments/chain), as the official facilitator names them.
const (
	// ReasonInsufficientBalance: the payer's token balance is below the
	// deposit.
	ReasonInsufficientBalance = "invalid_batch_settlement_evm_insufficient_balance"
	// ReasonDepositSimulationFailed: the escrow refused the deposit when
	// simulated (the authorization was used, or another revert).
	ReasonDepositSimulationFailed = "invalid_batch_settlement_evm_deposit_simulation_failed"
	// ReasonDepositTransactionFailed: the deposit transaction reverted, or
	// its receipt does not show the deposit (none, failed, or no Deposited
	// event of this channel and amount).
	ReasonDepositTransactionFailed = "invalid_batch_settlement_evm_deposit_transaction_failed"
	// ReasonClaimSimulationFailed: the escrow refused the claim when
	// simulated.
	ReasonClaimSimulationFailed = "invalid_batch_settlement_evm_claim_simulation_failed"
	// ReasonClaimTransactionFailed: the claim transaction reverted.
	ReasonClaimTransactionFailed = "invalid_batch_settlement_evm_claim_transaction_failed"
	// ReasonSettleSimulationFailed: the escrow refused the sweep (settle)
	// when simulated.
	ReasonSettleSimulationFailed = "invalid_batch_settlement_evm_settle_simulation_failed"
	// ReasonSettleTransactionFailed: the sweep (settle) transaction
	// reverted.
	ReasonSettleTransactionFailed = "invalid_batch_settlement_evm_settle_transaction_failed"
	// ReasonRefundSimulationFailed: the escrow refused the refund when
	// simulated.
	ReasonRefundSimulationFailed = "invalid_batch_settlement_evm_refund_simulation_failed"
	// ReasonRefundTransactionFailed: the refund transaction reverted.
	ReasonRefundTransactionFailed = "invalid_batch_settlement_evm_refund_transaction_failed"
)
