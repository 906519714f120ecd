// browser_wallet.js is the test wallet the browser tests inject before the page loads,
// as a wallet extension does: an EIP-1193 provider at window.ethereum, announced through
// EIP-6963. It signs eth_signTypedData_v4 through window.sandboxdWalletSign, a Go
// function of the test that holds the key (browser_paid_test.go). The test sets cfg to
// {address, chainId, reject}. Every request is kept in
// window.__walletCalls for the test to read.
(() => {
  const cfg = WALLET_CONFIG;
  let chainId = cfg.chainId;
  const calls = [];
  const listeners = {};
  window.__walletCalls = calls;

  const fail = (code, message) => Object.assign(new Error(message), { code });
  const emit = (event, value) => (listeners[event] || []).forEach((fn) => fn(value));

  async function request({ method, params }) {
    calls.push({ method, params: params === undefined ? null : JSON.parse(JSON.stringify(params)) });
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [cfg.address];
      case "eth_chainId":
        return chainId;
      case "wallet_switchEthereumChain":
        chainId = params[0].chainId;
        emit("chainChanged", chainId);
        return null;
      case "eth_signTypedData_v4": {
        if (cfg.reject) throw fail(4001, "User rejected the request.");
        if (String(params[0]).toLowerCase() !== cfg.address.toLowerCase()) throw fail(4100, "unknown account");
        const typed = JSON.parse(params[1]);
        // A wallet refuses typed data for a chain it is not on.
        if (Number(typed.domain.chainId) !== parseInt(chainId, 16)) throw fail(-32000, "chainId does not match the wallet's chain");
        return await window.sandboxdWalletSign(params[1]);
      }
      default:
        throw fail(4200, "unsupported method " + method);
    }
  }

  const provider = {
    request,
    on(event, fn) {
      (listeners[event] = listeners[event] || []).push(fn);
    },
    removeListener(event, fn) {
      listeners[event] = (listeners[event] || []).filter((f) => f !== fn);
    },
  };
  window.ethereum = provider;
  const info = Object.freeze({ uuid: "6d2f1b1e-0000-4000-8000-000000000402", name: "Test Wallet", icon: "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>", rdns: "dev.sandboxd.testwallet" });
  const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
})();
