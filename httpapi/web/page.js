// page.js runs the try-it page of sandboxd: it posts the program, in the
// language of the switch that language.js keeps, to POST /v1/code (or, with
// "keep state between runs" on, to the session that session.js keeps) and
// shows the answer; when the server asks for payment
// (x402 v2, HTTP 402) it shows the terms, has the visitor's own wallet
// (EIP-1193, found through EIP-6963) sign an EIP-3009 authorization for
// exactly those terms, and retries with PAYMENT-SIGNATURE. Everything a
// program or a server sends is put in the page as text (textContent), never
// as markup.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  /** MAX_WINDOW_S caps the validity of a signed authorization, as `sandboxd call` does (x402.DefaultClientMaxWindow). */
  const MAX_WINDOW_S = 300;
  /** DEFAULT_WINDOW_S is the window when the terms quote none (x402 PayPolicy.capWindow). */
  const DEFAULT_WINDOW_S = 60;

  /** NETWORKS names the known networks and their explorers' transaction pages. */
  const NETWORKS = {
    "eip155:84532": { name: "Base Sepolia", tx: "https://sepolia.basescan.org/tx/", rpc: "https://sepolia.base.org" },
    "eip155:8453": { name: "Base", tx: "https://basescan.org/tx/", rpc: "https://mainnet.base.org" },
  };

  /** USDC lists the USDC contracts by lower-case address: 6 decimals. */
  const USDC = {
    "0x036cbd53842c5426634e7929541ec2318f3dcf7e": "USDC",
    "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913": "USDC",
  };

  const TYPES = {
    EIP712Domain: [
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
    ],
    TransferWithAuthorization: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ],
  };

  /** state is what a paid run needs between the 402 and the signature: step is the request to pay for (session.js). */
  const state = { running: false, quote: null, step: null, wallets: [], imageURLs: [] };

  /** languages keeps the language switch and the environment chooser (language.js). */
  const languages = sandboxdLanguages($, onChoice);

  /** session keeps the session of "keep state between runs" (session.js). */
  const session = sandboxdSession($, languages);

  // ---- the editor ----

  let tabEscapes = false; // after Escape, Tab leaves the editor (keyboard users are not trapped)

  function onCodeKey(e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      run();
      return;
    }
    if (e.key === "Escape") {
      tabEscapes = true;
      return;
    }
    if (e.key !== "Tab" || e.ctrlKey || e.metaKey || e.altKey || tabEscapes) {
      tabEscapes = false;
      return;
    }
    e.preventDefault();
    indent(e.target, e.shiftKey);
  }

  /** indent indents (or, with outdent, dedents) the selected lines by four spaces, or inserts them at the caret. */
  function indent(ta, outdent) {
    const { selectionStart: s, selectionEnd: end, value } = ta;
    if (s === end && !outdent) {
      ta.setRangeText("    ", s, end, "end");
      return;
    }
    const from = value.lastIndexOf("\n", s - 1) + 1;
    const lines = value.slice(from, end).split("\n");
    const changed = lines.map((l) => (outdent ? l.replace(/^ {1,4}|^\t/, "") : "    " + l)).join("\n");
    ta.setRangeText(changed, from, end, "select");
  }

  // ---- showing answers ----

  function setText(id, text) {
    $(id).textContent = text;
  }

  function setBusy(on) {
    state.running = on;
    $("run").disabled = on;
    $("pay-wallet").disabled = on;
    $("busy").hidden = !on;
    $("run").setAttribute("aria-busy", on ? "true" : "false");
  }

  function setStatus(kind, text) {
    const b = $("status");
    b.className = "badge " + kind;
    b.textContent = text;
  }

  function message(kind, text) {
    const m = $("message");
    m.className = "message " + kind;
    m.textContent = text;
    m.hidden = !text;
  }

  function clearResult() {
    setStatus("idle", "running…");
    message("", "");
    for (const id of ["exit", "duration", "cpu", "rss"]) setText(id, "–");
    setText("stdout", "");
    setText("stderr", "");
    setText("value", "");
    $("value-box").hidden = true;
    $("settlement").hidden = true;
    showFiles([]);
  }

  /** IMAGES are the media types of files shown as pictures; never SVG, which can hold script. */
  const IMAGES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

  /** showFiles lists a run's files out and shows its images from blob: URLs, freeing the last run's. */
  function showFiles(files) {
    for (const url of state.imageURLs || []) URL.revokeObjectURL(url);
    state.imageURLs = [];
    const list = $("file-list");
    const images = $("images");
    list.replaceChildren();
    images.replaceChildren();
    for (const f of files) {
      const li = document.createElement("li");
      li.textContent = f.name + " · " + f.size + " bytes · " + f.media_type + (f.content == null ? " · over the caps, not returned" : "");
      list.append(li);
      if (f.content == null || !IMAGES.includes(f.media_type)) continue;
      try {
        const bytes = Uint8Array.from(atob(f.content), (c) => c.charCodeAt(0));
        const url = URL.createObjectURL(new Blob([bytes], { type: f.media_type }));
        state.imageURLs.push(url);
        const img = document.createElement("img");
        img.src = url;
        img.alt = f.name;
        images.append(img);
      } catch {
        // content that is not base64: listed, not shown
      }
    }
    $("files").hidden = files.length === 0;
  }

  /** STATUS says what each run status means, in words. */
  const STATUS = {
    ok: ["ok", "ok", ""],
    error: ["bad", "error", "The program exited with an error."],
    timeout: ["warn", "timeout", "The program ran past the time limit and was stopped."],
    oom: ["warn", "out of memory", "The program ran out of memory and was stopped."],
    output_limit: ["warn", "output limit", "The program printed more than the output limit; it was stopped and its output cut."],
  };

  function showRun(r) {
    const [kind, label, words] = STATUS[r.status] || ["bad", String(r.status), ""];
    setStatus(kind, label);
    message(kind === "ok" ? "" : kind, words);
    setText("exit", String(r.exit_code));
    setText("duration", r.duration_ms + " ms");
    setText("cpu", r.cpu_ms == null ? "n/a" : r.cpu_ms + " ms");
    setText("rss", r.max_rss_kb == null ? "n/a" : r.max_rss_kb + " KiB");
    setText("stdout", r.stdout || "");
    setText("stderr", r.stderr || "");
    showFiles(Array.isArray(r.files) ? r.files : []);
    if (r.truncated && r.status !== "output_limit") message("warn", "The output was cut at the limit.");
  }

  /** showValue shows a session call's result: the repr of its last expression, or null for none. */
  function showValue(v) {
    const none = v === null || v === undefined;
    $("value").className = "out" + (none ? " none" : "");
    setText("value", none ? "no value (the last statement is not an expression, or its value is None or undefined; Bash has none)" : String(v));
    $("value-box").hidden = false;
  }

  function showFailure(res, data, kind) {
    const why = data && typeof data.error === "string" ? data.error : "";
    const full = kind === "open" ? "Every session this server keeps is in use. " : "Every sandbox is busy. ";
    const words = {
      400: ["bad", "rejected", "The request was refused: " + why],
      403: ["bad", "forbidden", "Refused: " + why + " Nothing was charged."],
      404: ["bad", "not found", why],
      409: ["warn", "session busy", "Another run is still going in this session: " + why + " Nothing was charged; run again when it ends."],
      413: ["bad", "too large", "Too large: " + why],
      429: ["warn", "busy", full + retryWords(res) + (why ? " (" + why + ")" : "")],
      503: ["bad", "unavailable", "The service cannot run programs right now: " + why],
    }[res.status] || ["bad", "HTTP " + res.status, why || "The server answered " + res.status + "."];
    setStatus(words[0], words[1]);
    message(words[0], words[2]);
  }

  function retryWords(res) {
    const s = parseInt(res.headers.get("Retry-After") || "", 10);
    return Number.isFinite(s) ? "Try again in " + s + (s === 1 ? " second." : " seconds.") : "Try again shortly.";
  }

  // ---- the wire ----

  /** send posts step (session.js: a run, a session's open or one of its calls), paid when payment is set. */
  function send(step, payment) {
    const headers = { "Content-Type": "application/json" };
    if (payment) headers["PAYMENT-SIGNATURE"] = payment;
    return fetch(step.url, { method: "POST", headers, body: JSON.stringify(step.body), cache: "no-store", credentials: "omit" });
  }

  async function readJSON(res) {
    const text = await res.text();
    try {
      return JSON.parse(text);
    } catch {
      return { error: text.slice(0, 500) };
    }
  }

  /** b64 is standard base64 of a string's UTF-8, as the official client encodes its headers. */
  function b64(s) {
    const bytes = new TextEncoder().encode(s);
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    return btoa(bin);
  }

  function unb64JSON(v) {
    if (!v) return null;
    try {
      const bin = atob(v);
      const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
      const obj = JSON.parse(new TextDecoder().decode(bytes));
      return obj && typeof obj === "object" ? obj : null;
    } catch {
      return null;
    }
  }

  // ---- running ----

  async function run() {
    if (state.running) return;
    const body = { language: languages.language(), code: $("code").value };
    if ($("stdin").value !== "") body.stdin = $("stdin").value;
    if ($("env").value) body.environment = $("env").value;
    hidePay();
    clearResult();
    setBusy(true);
    try {
      const step = session.target(body);
      await answer(await send(step, null), step, false);
    } catch (e) {
      setStatus("bad", "no answer");
      message("bad", "The server could not be reached: " + e.message);
    } finally {
      setBusy(false);
    }
  }

  /** answer shows the server's answer to step, paid or not; a session's open goes on to its first call. */
  async function answer(res, step, paid) {
    const data = await readJSON(res);
    const settle = unb64JSON(res.headers.get("PAYMENT-RESPONSE"));
    if (res.status === 200 || (res.status === 201 && step.kind === "open")) {
      if (settle) showSettlement(settle, false, step.kind === "open" ? " for opening the session" : "");
      else if (!paid) setText("price", "free on this server");
      if (step.kind === "open") {
        const next = session.opened(data, step);
        await answer(await send(next, null), next, false);
        return;
      }
      showRun(data);
      if (step.kind === "call") {
        if (!data.session_ended) showValue(data.result);
        session.called(data);
      }
      return;
    }
    if (res.status === 404 && step.kind !== "run") {
      if (step.kind === "open") session.refused(data.error);
      else session.lost(data.error);
      setStatus("warn", step.kind === "open" ? "no sessions" : "session gone");
      message("warn", step.kind === "open" ? "This server keeps no sessions; turn the switch off to run afresh."
        : "The session is gone, and nothing ran. Run again to open a new one.");
      return;
    }
    if (res.status === 202 && paid) {
      setStatus("warn", "payment pending");
      message("warn", "The answer is withheld: " + (data.error ||
        "the payment was sent to the chain but is not confirmed yet; do not pay again, the server resolves it from the chain"));
      const network = state.quote ? state.quote.offer.network : "";
      showSettlement(settle || { success: false, transaction: data.transaction, network }, true);
      return;
    }
    if (res.status === 402) {
      const quote = readQuote(res, data);
      if (paid) {
        setStatus("bad", "payment refused");
        const reason = settle && settle.errorReason ? " (" + settle.errorReason + ")" : "";
        message("bad", "The server refused the payment" + reason + ": " + (data.error || "no reason given") +
          (settle ? "" : " Nothing was charged."));
        return;
      }
      if (!quote) {
        setStatus("bad", "payment required");
        message("bad", "The server asks for a payment this page cannot make (no x402 v2 \"exact\" terms on an EVM chain).");
        return;
      }
      state.quote = quote;
      state.step = step;
      showPay(quote, step.kind);
      setStatus("warn", "payment required");
      message("", "");
      return;
    }
    showFailure(res, data, step.kind);
  }

  // ---- the terms ----

  /** readQuote returns the x402 v2 terms of a 402 and the entry this page can pay, or null. */
  function readQuote(res, data) {
    const terms = unb64JSON(res.headers.get("PAYMENT-REQUIRED"));
    if (!terms || terms.x402Version !== 2 || !Array.isArray(terms.accepts)) return null;
    const offer = terms.accepts.find((a) => a && a.scheme === "exact" && /^eip155:\d+$/.test(a.network) &&
      /^\d+$/.test(a.amount) && /^0x[0-9a-fA-F]{40}$/.test(a.payTo) && /^0x[0-9a-fA-F]{40}$/.test(a.asset) &&
      a.extra && typeof a.extra.name === "string" && typeof a.extra.version === "string");
    return offer ? { terms, offer } : null;
  }

  function networkName(id) {
    const n = NETWORKS[id];
    return n ? n.name + " (" + id + ")" : id;
  }

  /** units formats an atomic amount with decimals. */
  function units(amount, decimals) {
    const s = amount.padStart(decimals + 1, "0");
    const whole = s.slice(0, s.length - decimals);
    const frac = s.slice(s.length - decimals).replace(/0+$/, "");
    return frac ? whole + "." + frac : whole;
  }

  function priceWords(offer) {
    const sym = USDC[offer.asset.toLowerCase()];
    return sym ? units(offer.amount, 6) + " " + sym : offer.amount + " atomic units of " + offer.extra.name;
  }

  function windowOf(offer) {
    const quoted = Number.isInteger(offer.maxTimeoutSeconds) && offer.maxTimeoutSeconds > 0 ? offer.maxTimeoutSeconds : DEFAULT_WINDOW_S;
    return Math.min(quoted, MAX_WINDOW_S);
  }

  /** PAY_FOR titles the terms by what they buy, and words the price. */
  const PAY_FOR = {
    run: ["This server charges per run", " per run"],
    open: ["Opening a session is paid, then each run in it", " to open a session"],
    call: ["This server charges per run in the session", " per run"],
  };

  function showPay(q, kind) {
    const o = q.offer;
    const [title, per] = PAY_FOR[kind] || PAY_FOR.run;
    setText("pay-title", title);
    setText("pay-wallet", kind === "open" ? "Sign with wallet and open the session" : "Sign with wallet and run");
    setText("price", priceWords(o) + per);
    setText("t-price", priceWords(o) + " (" + o.amount + " atomic units)");
    setText("t-asset", o.extra.name + " · " + o.asset);
    setText("t-network", networkName(o.network));
    setText("t-payee", o.payTo);
    const w = windowOf(o);
    setText("t-window", w + " s" + (w < (o.maxTimeoutSeconds || 0) ? " (the server asks " + o.maxTimeoutSeconds + " s; capped as sandboxd call caps it)" : ""));
    $("pay").hidden = false;
    note("", "");
    const none = state.wallets.length === 0 && !window.ethereum;
    $("nowallet").hidden = !none;
    $("pay-wallet").hidden = none;
    fillWallets();
  }

  function hidePay() {
    $("pay").hidden = true;
    state.quote = null;
  }

  function note(kind, text) {
    const n = $("wallet-note");
    n.className = "note " + kind;
    n.textContent = text;
  }

  // ---- wallets (EIP-6963, else window.ethereum) ----

  function discoverWallets() {
    window.addEventListener("eip6963:announceProvider", (e) => {
      const d = e.detail;
      if (!d || !d.info || !d.provider || typeof d.provider.request !== "function") return;
      if (state.wallets.some((w) => w.info.uuid === d.info.uuid)) return;
      state.wallets.push({ info: d.info, provider: d.provider });
      fillWallets();
    });
    window.dispatchEvent(new Event("eip6963:requestProvider"));
  }

  function fillWallets() {
    const sel = $("wallets");
    sel.replaceChildren();
    for (const [i, w] of state.wallets.entries()) {
      const opt = document.createElement("option");
      opt.value = String(i);
      opt.textContent = String(w.info.name || w.info.rdns || "wallet " + (i + 1));
      sel.append(opt);
    }
    sel.hidden = state.wallets.length < 2;
    if (state.quote) {
      const none = state.wallets.length === 0 && !window.ethereum;
      $("nowallet").hidden = !none;
      $("pay-wallet").hidden = none;
    }
  }

  function chosenProvider() {
    if (state.wallets.length) return state.wallets[Number($("wallets").value) || 0].provider;
    return window.ethereum && typeof window.ethereum.request === "function" ? window.ethereum : null;
  }

  /** refusal is an error the page explains itself, after which nothing is sent. */
  function refusal(text) {
    const e = new Error(text);
    e.refusal = true;
    return e;
  }

  /** onChain makes sure the wallet is on network's chain, asking it to switch (and, for a known network it lacks, to add it). */
  async function onChain(provider, network) {
    const chainId = Number(network.split(":")[1]);
    const name = networkName(network);
    const hex = "0x" + chainId.toString(16);
    const current = parseInt(await provider.request({ method: "eth_chainId" }), 16);
    if (current === chainId) return;
    note("", "Your wallet is on chain " + current + "; asking it to switch to " + name + "…");
    try {
      await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: hex }] });
    } catch (e) {
      const known = NETWORKS[network];
      if (e && e.code === 4902 && known) {
        await provider.request({ method: "wallet_addEthereumChain", params: [{ chainId: hex, chainName: known.name, rpcUrls: [known.rpc],
          nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, blockExplorerUrls: [known.tx.replace(/tx\/$/, "")] }] });
      } else if (e && e.code === 4902) {
        throw refusal("Your wallet does not have " + name + " (chain " + chainId + "). Add it to the wallet and try again. Nothing was signed or sent.");
      } else if (e && e.code === 4001) {
        throw refusal("You declined to switch the wallet to " + name + ". Nothing was signed or sent.");
      } else {
        throw e;
      }
    }
    const now = parseInt(await provider.request({ method: "eth_chainId" }), 16);
    if (now !== chainId) throw refusal("The wallet is on chain " + now + ", not " + name + ". Nothing was signed or sent.");
  }

  /** authorization is the EIP-3009 authorization of from for exactly offer, as @x402/evm builds it. */
  function authorization(from, offer) {
    const nonce = new Uint8Array(32);
    crypto.getRandomValues(nonce);
    const now = Math.floor(Date.now() / 1000);
    return {
      from,
      to: offer.payTo,
      value: offer.amount,
      validAfter: "0",
      validBefore: String(now + windowOf(offer)),
      nonce: "0x" + Array.from(nonce, (b) => b.toString(16).padStart(2, "0")).join(""),
    };
  }

  function typedData(offer, auth, chainId) {
    return {
      types: TYPES,
      primaryType: "TransferWithAuthorization",
      domain: { name: offer.extra.name, version: offer.extra.version, chainId, verifyingContract: offer.asset },
      message: auth,
    };
  }

  async function pay() {
    const q = state.quote;
    const provider = chosenProvider();
    if (!q || state.running) return;
    if (!provider) {
      $("nowallet").hidden = false;
      return;
    }
    setBusy(true);
    try {
      const header = await sign(provider, q);
      note("ok", "Signed. Sending the paid run…");
      setStatus("idle", "running…");
      const res = await send(state.step, header);
      $("pay").hidden = true;
      await answer(res, state.step, true);
    } catch (e) {
      if (e && e.code === 4001) note("bad", "You rejected the signature. Nothing was signed, nothing was sent, and nothing was charged.");
      else if (e && e.code === 4100) note("bad", "The wallet refused: this page is not allowed to use that account. Nothing was sent.");
      else if (e && e.refusal) note("bad", e.message);
      else note("bad", "The wallet failed: " + ((e && e.message) || String(e)) + ". Nothing was sent.");
    } finally {
      setBusy(false);
    }
  }

  /** sign has the wallet sign the authorization for q and returns the PAYMENT-SIGNATURE header. */
  async function sign(provider, q) {
    const o = q.offer;
    const chainId = Number(o.network.split(":")[1]);
    note("", "Asking your wallet for an account…");
    const accounts = await provider.request({ method: "eth_requestAccounts" });
    const from = Array.isArray(accounts) ? accounts[0] : null;
    if (typeof from !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(from)) throw refusal("The wallet shared no account. Nothing was signed or sent.");
    await onChain(provider, o.network);
    const auth = authorization(from, o);
    note("", "Approve the signature in your wallet: " + priceWords(o) + " to " + o.payTo + ".");
    const signature = await provider.request({ method: "eth_signTypedData_v4", params: [from, JSON.stringify(typedData(o, auth, chainId))] });
    if (typeof signature !== "string" || !/^0x[0-9a-fA-F]{130}$/.test(signature)) throw refusal("The wallet returned no valid signature. Nothing was sent.");
    const still = await provider.request({ method: "eth_accounts" });
    if (!Array.isArray(still) || !still.some((a) => String(a).toLowerCase() === from.toLowerCase())) {
      throw refusal("The wallet changed account while signing. Nothing was sent.");
    }
    const payload = { x402Version: 2, payload: { authorization: auth, signature }, extensions: q.terms.extensions, resource: q.terms.resource, accepted: o };
    return b64(JSON.stringify(payload));
  }

  // ---- the settlement ----

  /** showSettlement shows a payment's settlement; what says what it bought when that is not this answer's run. */
  function showSettlement(s, pending, what = "") {
    const box = $("settlement");
    box.className = "settlement " + (pending ? "warn" : s.success ? "ok" : "bad");
    setText("settle-label", (pending ? "Settlement pending" : s.success ? "Paid, settled on chain" : "Settlement failed") + what + ":");
    const tx = $("settle-tx");
    tx.replaceChildren();
    const hash = typeof s.transaction === "string" ? s.transaction : "";
    const net = NETWORKS[s.network];
    if (/^0x[0-9a-fA-F]{64}$/.test(hash) && net) {
      const a = document.createElement("a");
      a.href = net.tx + hash;
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      a.textContent = hash;
      tx.append(a, " on " + net.name);
    } else {
      tx.textContent = (hash || "no transaction") + (s.network ? " on " + s.network : "");
    }
    box.hidden = false;
  }

  // ---- call it from code ----

  /** fillSnippets shows the calls of a program in lang, in env unless that is the language's own. */
  function fillSnippets(lang, env) {
    const origin = location.origin;
    const k = languages.snippet(lang);
    const where = env && env !== languages.home(lang) ? ",\"environment\":" + JSON.stringify(env) : "";
    setText("snip-curl", "curl -s " + origin + "/v1/code \\\n  -H 'Content-Type: application/json' \\\n" +
      "  -d '{\"language\":" + JSON.stringify(lang) + where + ",\"code\":" + JSON.stringify(k.run) + "}'");
    setText("snip-session", "curl -s " + origin + "/v1/sessions -d '{\"language\":" + JSON.stringify(lang) + where + "}'\n" +
      "# {\"session_id\":\"ses_…\", …}: then, as often as you like,\n" +
      "curl -s " + origin + "/v1/sessions/ses_…/code \\\n  -H 'Content-Type: application/json' \\\n" +
      "  -d '{\"code\":\"" + k.state + "\"}'\n" +
      "# … " + k.shows + " …; end it with curl -s -X DELETE " + origin + "/v1/sessions/ses_…");
    setText("snip-call", "sandboxd call --key-file payer.key --url " + origin + "/v1/code" +
      (lang === "python" ? "" : " --language " + lang) + " -c '" + k.run + "'");
    setText("snip-tool", "run_" + lang);
    setText("snip-mcp", JSON.stringify({ mcpServers: { sandboxd: { type: "http", url: origin + "/mcp" } } }, null, 2));
  }

  /** onChoice follows a language or environment chosen: the snippets, and the session (another closes it). */
  function onChoice(lang, env) {
    fillSnippets(lang, env);
    session.moved(lang, env);
  }

  /** readDocument gives the language switch the OpenAPI document: the languages and environments run here. */
  async function readDocument() {
    try {
      const res = await fetch("/v1/openapi.json", { cache: "no-store", credentials: "omit" });
      languages.fill(await res.json());
    } catch {
      // no document: Python alone, in the server's default environment
    }
  }

  /** BUILD_POLL_MS is how often the page asks again while an environment's image is being built. */
  const BUILD_POLL_MS = 15000;

  /**
   * showBuilding notes, beside the environment chooser, the environments whose
   * images are still being built (GET /v1/version "building") and when they
   * should be ready, and asks again until none is.
   */
  async function showBuilding() {
    let building = {};
    try {
      const res = await fetch("/v1/version", { cache: "no-store", credentials: "omit" });
      building = (await res.json()).building || {};
    } catch {
      return; // no answer: nothing to note
    }
    const notes = Object.keys(building).sort().map((name) => {
      const secs = Number(building[name].ready_in_seconds) || 0;
      const when = secs > 0 ? "ready in about " + Math.max(1, Math.round(secs / 60)) + " min" : "ready any moment";
      return name + " is being built, " + when;
    });
    const note = $("env-note");
    note.textContent = notes.join("; ");
    note.hidden = notes.length === 0;
    if (notes.length > 0) setTimeout(showBuilding, BUILD_POLL_MS);
  }

  function start() {
    fillSnippets("python", "");
    readDocument();
    showBuilding();
    $("env").addEventListener("change", () => onChoice(languages.language(), $("env").value));
    $("code").addEventListener("keydown", onCodeKey);
    $("run").addEventListener("click", run);
    $("pay-wallet").addEventListener("click", pay);
    session.start();
    $("pay-cancel").addEventListener("click", () => {
      hidePay();
      setStatus("idle", "not run");
    });
    discoverWallets();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
