// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title BatchSettlement: a test stand-in for the x402 batch-settlement escrow on a local chain.
/// @notice Written from the x402 batch-settlement EVM spec and the ABI the official @x402/evm
/// client, server and facilitator call: the same function selectors, return layouts, EIP-712
/// domain ("x402 Batch Settlement", "1"), type hashes, events and custom errors as the real
/// x402BatchSettlement, so the official code cannot tell the two apart on the paths it uses.
/// @dev Placed with anvil_setCode at 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003, so nothing is set
/// in a constructor and there are no immutables: the domain separator is computed from
/// block.chainid and address(this) on every call. Deliberately left out: ERC-1271 signers
/// (a zero payerAuthorizer, or a contract receiverAuthorizer, fails with InvalidSignature),
/// the Permit2 collector, and the transient-storage reentrancy guard (state changes come
/// before every token call instead).
contract BatchSettlement {
    /// @notice ChannelConfig is a channel's immutable parameters; its EIP-712 hash is the channel id.
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// @notice ChannelState is what a channel holds: balance is gross (claims never lower it;
    /// refunds and finalized withdrawals do) and totalClaimed is cumulative.
    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    /// @notice WithdrawalState is a payer's pending timed withdrawal; initiatedAt 0 means none.
    struct WithdrawalState {
        uint128 amount;
        uint40 initiatedAt;
    }

    /// @notice ReceiverState is what was claimed for a receiver in a token, and how much of it was paid out.
    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    /// @notice Voucher is the payer-signed ceiling of what a channel's receiver may claim.
    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// @notice VoucherClaim is one claim row: a voucher, its signature and the cumulative amount claimed.
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    /// @notice MIN_WITHDRAW_DELAY is the shortest withdrawDelay a deposit accepts (15 minutes).
    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    /// @notice MAX_WITHDRAW_DELAY is the longest withdrawDelay a deposit accepts (30 days).
    uint40 public constant MAX_WITHDRAW_DELAY = 2592000;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    /// @notice CHANNEL_CONFIG_TYPEHASH is the EIP-712 type hash of ChannelConfig.
    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    /// @notice VOUCHER_TYPEHASH is the EIP-712 type hash of Voucher as signed (by channel id).
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    /// @notice REFUND_TYPEHASH is the EIP-712 type hash of a receiver authorizer's Refund.
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    /// @notice CLAIM_ENTRY_TYPEHASH is the EIP-712 type hash of one row of a ClaimBatch.
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    /// @notice CLAIM_BATCH_TYPEHASH is the EIP-712 type hash of ClaimBatch, with ClaimEntry appended.
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    // The upper bound of s for a signature in the lower half of the curve order (EIP-2).
    uint256 private constant HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice channels is each channel's balance and cumulative claimed amount.
    mapping(bytes32 => ChannelState) public channels;
    /// @notice refundNonce counts each channel's refunds; a Refund signature names the current value.
    mapping(bytes32 => uint256) public refundNonce;
    /// @notice pendingWithdrawals is each channel's pending timed withdrawal.
    mapping(bytes32 => WithdrawalState) public pendingWithdrawals;
    /// @notice receivers is, per receiver and token, what was claimed and what was swept to it.
    mapping(address => mapping(address => ReceiverState)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error InvalidChannel();
    error ZeroDeposit();
    error DepositOverflow();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error NotAuthorizedToFinalizeWithdraw();
    error WithdrawDelayNotElapsed();
    error NothingToWithdraw();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayOutOfRange();
    error EmptyBatch();
    error DepositCollectionFailed();
    error InvalidCollector();
    error InvalidRefundNonce();
    error ZeroRefund();

    /// @notice deposit adds amount to config's channel, pulled from the payer by collector with
    /// collectorData; it fails unless this contract's token balance rose by exactly amount.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
    {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();
        bytes32 id = getChannelId(config);
        ChannelState storage ch = channels[id];
        if (uint256(ch.balance) + amount > type(uint128).max) revert DepositOverflow();
        bool opens = ch.balance == 0 && ch.totalClaimed == 0;
        ch.balance += amount;

        uint256 before = _balanceOf(config.token, address(this));
        (bool ok, bytes memory ret) = collector.call(
            abi.encodeWithSelector(DepositCollector3009.collect.selector, config.payer, config.token, uint256(amount), id, collectorData)
        );
        if (!ok) _bubble(ret);
        if (_balanceOf(config.token, address(this)) != before + amount) revert DepositCollectionFailed();

        if (opens) emit ChannelCreated(id, config);
        emit Deposited(id, msg.sender, amount, ch.balance);
    }

    /// @notice claim applies claim rows; the caller must be each row's receiver or receiverAuthorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            if (!_receiverSide(msg.sender, voucherClaims[i].voucher.channel)) revert NotAuthorizedToClaim();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice claimWithSignature applies claim rows that all name one receiverAuthorizer, who
    /// signed getClaimBatchDigest of them; anyone may send it.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature) external {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!_signedBy(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) revert InvalidSignature();
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice settle pays receiver what was claimed for it in token and not yet paid; with nothing
    /// owed it does nothing and emits nothing. Anyone may call it.
    function settle(address receiver, address token) external {
        ReceiverState storage rs = receivers[receiver][token];
        uint128 amount = rs.totalClaimed - rs.totalSettled;
        if (amount == 0) return;
        rs.totalSettled = rs.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    /// @notice initiateWithdraw starts the payer's timed withdrawal of amount from the unclaimed balance.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 id = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage ch = channels[id];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawAmountExceedsAvailable();
        ws.amount = amount;
        ws.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(id, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @notice finalizeWithdraw pays the payer its pending withdrawal once withdrawDelay passed,
    /// capped at what is unclaimed at that moment.
    function finalizeWithdraw(ChannelConfig calldata config) external {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 id = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(ws.initiatedAt) + config.withdrawDelay) revert WithdrawDelayNotElapsed();
        ChannelState storage ch = channels[id];
        uint128 amount = _min(ws.amount, ch.balance - ch.totalClaimed);
        delete pendingWithdrawals[id];
        ch.balance -= amount;
        emit WithdrawFinalized(id, msg.sender, amount);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
        if (amount > 0) _transfer(config.token, config.payer, amount);
    }

    /// @notice refund returns up to amount of the unclaimed balance to the payer; the caller must
    /// be the receiver or receiverAuthorizer.
    function refund(ChannelConfig calldata config, uint128 amount) external {
        if (!_receiverSide(msg.sender, config)) revert NotAuthorizedToRefund();
        _refund(config, amount);
    }

    /// @notice refundWithSignature is refund authorized by the receiverAuthorizer's Refund
    /// signature over the channel's current refundNonce; anyone may send it.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external {
        bytes32 id = getChannelId(config);
        if (nonce != refundNonce[id]) revert InvalidRefundNonce();
        if (!_signedBy(config.receiverAuthorizer, getRefundDigest(id, nonce, amount), receiverAuthorizerSignature)) {
            revert InvalidSignature();
        }
        _refund(config, amount);
    }

    /// @notice multicall runs each call on this contract in turn (as the same sender) and
    /// returns their results; any failure reverts all with its own revert data.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            (bool ok, bytes memory ret) = address(this).delegatecall(data[i]);
            if (!ok) _bubble(ret);
            results[i] = ret;
        }
    }

    /// @notice DOMAIN_SEPARATOR is the EIP-712 domain separator for this chain and address.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256("x402 Batch Settlement"), keccak256("1"), block.chainid, address(this)
            )
        );
    }

    /// @notice getChannelId is the channel id of config: its EIP-712 hash under this contract's domain.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _typedHash(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    /// @notice getVoucherDigest is what a payer authorizer signs for a voucher.
    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _typedHash(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    /// @notice getRefundDigest is what a receiver authorizer signs for refundWithSignature.
    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _typedHash(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice getClaimBatchDigest is what a receiver authorizer signs for claimWithSignature: the
    /// EIP-712 hash of a ClaimBatch whose entries are (channel id, ceiling, totalClaimed) per row.
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            VoucherClaim calldata vc = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH, getChannelId(vc.voucher.channel), vc.voucher.maxClaimableAmount, vc.totalClaimed
                )
            );
        }
        return _typedHash(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // _applyClaim raises a channel's totalClaimed to the row's; a row at or below it is a no-op,
    // so replays and duplicate claimers are harmless.
    function _applyClaim(VoucherClaim calldata vc) private {
        bytes32 id = getChannelId(vc.voucher.channel);
        ChannelState storage ch = channels[id];
        if (vc.totalClaimed <= ch.totalClaimed) return;
        if (vc.totalClaimed > vc.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (vc.totalClaimed > ch.balance) revert ClaimExceedsBalance();
        address signer = vc.voucher.channel.payerAuthorizer;
        if (signer == address(0) || !_signedBy(signer, getVoucherDigest(id, vc.voucher.maxClaimableAmount), vc.signature)) {
            revert InvalidSignature();
        }
        uint128 delta = vc.totalClaimed - ch.totalClaimed;
        ch.totalClaimed = vc.totalClaimed;
        receivers[vc.voucher.channel.receiver][vc.voucher.channel.token].totalClaimed += delta;
        emit Claimed(id, msg.sender, delta, vc.totalClaimed);
    }

    // _refund advances the refund nonce first (also when nothing is left to refund), then pays
    // the payer up to amount of the unclaimed balance and shrinks a pending withdrawal by it.
    function _refund(ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        bytes32 id = getChannelId(config);
        refundNonce[id]++;
        ChannelState storage ch = channels[id];
        uint128 paid = _min(amount, ch.balance - ch.totalClaimed);
        if (paid == 0) return;
        ch.balance -= paid;
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt != 0) {
            if (paid >= ws.amount) delete pendingWithdrawals[id];
            else ws.amount -= paid;
        }
        emit Refunded(id, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
        _transfer(config.token, config.payer, paid);
    }

    function _receiverSide(address sender, ChannelConfig calldata config) private pure returns (bool) {
        return sender == config.receiver || sender == config.receiverAuthorizer;
    }

    function _typedHash(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    // _signedBy accepts only an EOA's 65-byte signature (v 27 or 28, low s) that recovers to signer.
    function _signedBy(address signer, bytes32 digest, bytes calldata signature) private pure returns (bool) {
        if (signer == address(0) || signature.length != 65) return false;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) return false;
        return ecrecover(digest, v, r, s) == signer;
    }

    function _min(uint128 a, uint128 b) private pure returns (uint128) {
        return a < b ? a : b;
    }

    function _balanceOf(address token, address account) private view returns (uint256) {
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSignature("balanceOf(address)", account));
        if (!ok || ret.length < 32) revert DepositCollectionFailed();
        return abi.decode(ret, (uint256));
    }

    // _transfer sends amount of token to `to`, accepting tokens that return nothing.
    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSignature("transfer(address,uint256)", to, amount));
        if (!ok) _bubble(ret);
        require(ret.length == 0 || abi.decode(ret, (bool)), "BatchSettlement: transfer failed");
    }

    function _bubble(bytes memory ret) private pure {
        assembly {
            revert(add(ret, 32), mload(ret))
        }
    }
}

/// @title DepositCollector3009: the stand-in ERC-3009 deposit collector of BatchSettlement.
/// @notice Pulls a deposit with the token's receiveWithAuthorization (the bytes-signature form)
/// to itself, as ERC-3009 requires the payee to submit it, then forwards it to the escrow.
/// @dev Placed with anvil_setCode at 0x4020806089470a89826cB9fB1f4059150b550004; the escrow's
/// address is a constant, since no constructor runs there.
contract DepositCollector3009 {
    /// @notice ESCROW is the only caller collect accepts.
    address public constant ESCROW = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlyX402BatchSettlement();

    /// @notice collect moves amount of token from payer to the escrow. data is
    /// abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature); the
    /// authorization's nonce is keccak256(abi.encode(channelId, salt)), binding it to the channel.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external {
        if (msg.sender != ESCROW) revert OnlyX402BatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(data, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        (bool ok, bytes memory ret) = token.call(
            abi.encodeWithSignature(
                "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
                payer,
                address(this),
                amount,
                validAfter,
                validBefore,
                nonce,
                signature
            )
        );
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        (ok, ret) = token.call(abi.encodeWithSignature("transfer(address,uint256)", ESCROW, amount));
        require(ok && (ret.length == 0 || abi.decode(ret, (bool))), "DepositCollector3009: transfer failed");
    }
}
