// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title EIP3009Token: a test stand-in for Circle's USDC (FiatToken v2) on a local chain.
/// @notice Only for tests: anyone may mint. It keeps USDC's EIP-712 domain (name "USDC",
/// version "2") and its EIP-3009 entry points and revert messages, so the official x402
/// facilitator and this project's own settler treat it as the real token.
/// @dev Nothing is set in a constructor and there are no immutables: the domain separator
/// is computed from block.chainid and address(this) on every call. Its runtime code can
/// therefore be copied to any address (anvil_setCode at the Base Sepolia USDC address)
/// and still verify signatures made for that address.
contract EIP3009Token {
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH = keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");
    // The upper bound of s for a signature in the lower half of the curve order (EIP-2).
    uint256 private constant HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    // bytes4(keccak256("isValidSignature(bytes32,bytes)")), the ERC-1271 magic value.
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    mapping(address => uint256) private _balances;
    mapping(address => mapping(address => uint256)) private _allowances;
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;
    uint256 private _totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// @notice name is the EIP-712 domain name of USDC on Base Sepolia.
    function name() external pure returns (string memory) {
        return "USDC";
    }

    /// @notice symbol is the ticker.
    function symbol() external pure returns (string memory) {
        return "USDC";
    }

    /// @notice version is the EIP-712 domain version.
    function version() external pure returns (string memory) {
        return "2";
    }

    /// @notice decimals is 6, as USDC's.
    function decimals() external pure returns (uint8) {
        return 6;
    }

    /// @notice totalSupply is everything minted so far.
    function totalSupply() external view returns (uint256) {
        return _totalSupply;
    }

    /// @notice balanceOf is the balance of account.
    function balanceOf(address account) external view returns (uint256) {
        return _balances[account];
    }

    /// @notice allowance is what spender may still move from owner.
    function allowance(address owner, address spender) external view returns (uint256) {
        return _allowances[owner][spender];
    }

    /// @notice DOMAIN_SEPARATOR is the EIP-712 domain separator for this chain and address.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(DOMAIN_TYPEHASH, keccak256(bytes("USDC")), keccak256(bytes("2")), block.chainid, address(this))
        );
    }

    /// @notice authorizationState tells whether authorizer's nonce was used or canceled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    /// @notice mint creates value tokens for to. Open to anyone: this is a test token.
    function mint(address to, uint256 value) external {
        require(to != address(0), "ERC20: mint to the zero address");
        _totalSupply += value;
        _balances[to] += value;
        emit Transfer(address(0), to, value);
    }

    /// @notice transfer moves value from the caller to to.
    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    /// @notice approve lets spender move up to value from the caller.
    function approve(address spender, uint256 value) external returns (bool) {
        _allowances[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    /// @notice transferFrom moves value from from to to within the caller's allowance.
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = _allowances[from][msg.sender];
        require(value <= allowed, "ERC20: transfer amount exceeds allowance");
        if (allowed != type(uint256).max) {
            _allowances[from][msg.sender] = allowed - value;
        }
        _transfer(from, to, value);
        return true;
    }

    /// @notice transferWithAuthorization executes a transfer signed by from (v, r, s form).
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v)
        );
    }

    /// @notice transferWithAuthorization executes a transfer signed by from (a 65-byte
    /// signature, or an ERC-1271 signature when from is a contract).
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice receiveWithAuthorization is transferWithAuthorization that only the payee may submit.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v)
        );
    }

    /// @notice receiveWithAuthorization is the bytes-signature form of the above (a 65-byte
    /// signature, or an ERC-1271 signature when from is a contract), which the x402
    /// batch-settlement ERC-3009 deposit collector calls.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice cancelAuthorization burns an unused nonce of authorizer.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        require(!_authorizationStates[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        require(_isValidSignature(authorizer, _digest(structHash), abi.encodePacked(r, s, v)), "FiatTokenV2: invalid signature");
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _transferWithAuthorization(
        bytes32 typeHash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        require(!_authorizationStates[from][nonce], "FiatTokenV2: authorization is used or canceled");
        bytes32 structHash = keccak256(abi.encode(typeHash, from, to, value, validAfter, validBefore, nonce));
        require(_isValidSignature(from, _digest(structHash), signature), "FiatTokenV2: invalid signature");
        _authorizationStates[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _transfer(address from, address to, uint256 value) private {
        require(to != address(0), "ERC20: transfer to the zero address");
        uint256 balance = _balances[from];
        require(value <= balance, "ERC20: transfer amount exceeds balance");
        _balances[from] = balance - value;
        _balances[to] += value;
        emit Transfer(from, to, value);
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    // _isValidSignature accepts an EOA's 65-byte signature (v of 27 or 28, low s) that
    // recovers to signer, or, when signer has code, that contract's ERC-1271 approval.
    function _isValidSignature(address signer, bytes32 digest, bytes memory signature) private view returns (bool) {
        if (signature.length == 65 && _recover(digest, signature) == signer) {
            return true;
        }
        if (signer.code.length == 0) {
            return false;
        }
        (bool ok, bytes memory ret) =
            signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, signature));
        return ok && ret.length >= 32 && abi.decode(ret, (bytes32)) == bytes32(ERC1271_MAGIC);
    }

    function _recover(bytes32 digest, bytes memory signature) private pure returns (address) {
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) {
            return address(0);
        }
        return ecrecover(digest, v, r, s);
    }
}
