// payer.mjs is the one payer of the interop scripts: the official x402 client
// (@x402/core's x402Client with @x402/evm's exact scheme on Base Sepolia) reading the
// terms of an unpaid call and signing the v2 payment for them. client.mjs, sign.mjs,
// discovery.mjs and mcp.mjs sign through it.
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";

/** NETWORK is Base Sepolia, the chain anvil stands in for. */
export const NETWORK = "eip155:84532";

/** REQUEST_TIMEOUT_MS bounds each HTTP request, so no script can hang its caller. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** v2Client is the official client paying with account in the exact scheme. */
export function v2Client(account) {
  return new x402Client().register(NETWORK, new ExactEvmScheme(account));
}

/** timedFetch is fetch with REQUEST_TIMEOUT_MS as its deadline. */
export function timedFetch(input, init) {
  return fetch(input, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
}

/** codeRequest is the fetch init of POST /v1/code running code. */
export function codeRequest(code) {
  return { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ language: "python", code }) };
}

/** bodyOf is the response's JSON body, or its text when it is not JSON. */
export async function bodyOf(res) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** termsOf is what the official HTTP client reads as the terms of a 402 and its body. */
export function termsOf(res, body) {
  return new x402HTTPClient(new x402Client()).getPaymentRequiredResponse((n) => res.headers.get(n), body);
}

/**
 * unpaidTerms posts code to url without paying and returns the terms of the answer;
 * it throws, naming the answer, when that is not a 402.
 */
export async function unpaidTerms(url, code = "print(1)") {
  const res = await timedFetch(url, codeRequest(code));
  const body = await bodyOf(res);
  if (res.status !== 402) throw new Error(`unpaid call answered ${res.status}, want 402: ${JSON.stringify(body)}`);
  return termsOf(res, body);
}

/**
 * signPayment has the official client sign a v2 payment of account for the terms,
 * without sending it: the payload, its header and the clients that made them.
 */
export async function signPayment(account, required) {
  const client = v2Client(account);
  const httpClient = new x402HTTPClient(client);
  const payload = await client.createPaymentPayload(required);
  return { client, httpClient, payload, headers: httpClient.encodePaymentSignatureHeader(payload) };
}
