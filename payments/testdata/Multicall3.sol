// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Multicall3: the tryAggregate part of the canonical Multicall3, for a local chain.
/// @notice The official x402 facilitator reads a failed payment's cause (balance, used nonce,
/// token name) in one tryAggregate call at the canonical address
/// 0xcA11bde05977b3631167028862bE2a173976CA11, which a fresh anvil chain lacks. Placing this
/// runtime code there (anvil_setCode) lets it name the cause, e.g. insufficient_funds.
contract Multicall3 {
    /// @notice Call is one call to make.
    struct Call {
        address target;
        bytes callData;
    }

    /// @notice Result is one call's outcome.
    struct Result {
        bool success;
        bytes returnData;
    }

    /// @notice tryAggregate makes every call and reports each outcome; with requireSuccess
    /// a failed call reverts the whole batch.
    function tryAggregate(bool requireSuccess, Call[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) {
                require(success, "Multicall3: call failed");
            }
            returnData[i] = Result(success, ret);
        }
    }
}
