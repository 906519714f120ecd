#!/usr/bin/env bash
# demo.sh shows one paid run end to end, offline, with nothing but this machine:
#   1. a local chain: anvil (from test/interop/node_modules) with Base Sepolia's chain id, the
#      test token's code at the Base Sepolia USDC address, 1 USDC minted to a fresh payer;
#   2. sandboxd in onchain mode, settling itself with an anvil account as relayer;
#   3. `sandboxd call` paying $0.005 for print(6*7) with the payer's key;
#   4. the answer, the transaction and both balances before and after.
# Everything it starts is stopped when it ends, however it ends.
# Needs: Go, Node.js 20+ with npm (first run only: test/interop/setup.sh), Docker with the
# sandbox image (make image). Environment: SANDBOXD_BIN (default bin/sandboxd, built
# when missing), DEMO_CODE (default print(6*7)).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${SANDBOXD_BIN:-$root/bin/sandboxd}"
code="${DEMO_CODE:-print(6*7)}"
usdc="0x036CbD53842c5426634e7929541eC2318f3dCF7e"
# anvil's first default account: a public test key, worthless outside a local chain.
relayer_key="0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

if [ -t 1 ]; then
  say() { printf '\033[1mdemo:\033[0m %s\n' "$*"; }
else
  say() { printf 'demo: %s\n' "$*"; }
fi
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/sandboxd-demo.XXXXXX")"
anvil_pid="" service_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$service_pid" ] && kill -0 "$service_pid" 2>/dev/null; then
    kill -TERM "$service_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$service_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$service_pid" 2>/dev/null || true
    wait "$service_pid" 2>/dev/null || true
  fi
  if [ -n "$anvil_pid" ]; then
    kill -TERM "$anvil_pid" 2>/dev/null || true
    wait "$anvil_pid" 2>/dev/null || true
  fi
  if [ "$rc" != 0 ] && [ -s "$work/sandboxd.log" ]; then
    echo "--- sandboxd log ---" >&2
    tail -n 30 "$work/sandboxd.log" >&2
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# chain runs test/interop/chain.mjs and prints its JSON answer; field extracts one value.
chain() { node "$root/test/interop/chain.mjs" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v[k];console.log(v)})' "$1"; }
usdc_of() { node -e 'const v=BigInt(process.argv[1]);console.log(`${v/1000000n}.${String(v%1000000n).padStart(6,"0")} USDC`)' "$1"; }
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

command -v node >/dev/null || die "node is not installed (Node.js 20+ is needed for the local chain)"
"$root/test/interop/setup.sh"
if [ ! -x "$bin" ]; then
  say "building $bin"
  go build -o "$bin" ./cmd/sandboxd
fi
"$root/scripts/docker-up.sh"

case "$(uname -m)" in
  aarch64|arm64) anvil="$root/test/interop/node_modules/@foundry-rs/anvil-linux-arm64/bin/anvil" ;;
  *) anvil="$root/test/interop/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil" ;;
esac

# 1. The chain.
anvil_port="$(free_port)"
rpc="http://127.0.0.1:$anvil_port"
"$anvil" --chain-id 84532 --host 127.0.0.1 --port "$anvil_port" --silent &
anvil_pid=$!
for _ in $(seq 1 100); do
  node -e 'fetch(process.argv[1],{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({jsonrpc:"2.0",id:1,method:"eth_chainId",params:[]})}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$rpc" && break
  kill -0 "$anvil_pid" 2>/dev/null || die "anvil exited"
  sleep 0.1
done

payer_json="$(chain newkey)"
payer_addr="$(field address <<<"$payer_json")"
field key <<<"$payer_json" >"$work/payer.key"
payee_addr="$(chain newkey | field address)"
printf '%s\n' "$relayer_key" >"$work/relayer.key"
chmod 600 "$work/payer.key" "$work/relayer.key"
chain setup --rpc "$rpc" --mint "$payer_addr=1000000" >/dev/null
say "chain     anvil at $rpc (chain id 84532), test USDC at $usdc"
say "payer     $payer_addr (fresh key, 1 USDC minted)"
say "payee     $payee_addr"

# 2. The service, settling on chain itself.
config_args=()
[ -f "$root/config.yaml" ] && config_args=(--config "$root/config.yaml")
SANDBOX_SERVER_ADDR=127.0.0.1:0 SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0 \
SANDBOX_RUNTIME_INSTANCE="demo-$$" \
SANDBOX_PAYMENTS_ENABLED=true \
SANDBOX_PAYMENTS_SETTLEMENT=onchain \
SANDBOX_PAYMENTS_RPC_URL="$rpc" \
SANDBOX_PAYMENTS_RELAYER_KEY_FILE="$work/relayer.key" \
SANDBOX_PAYMENTS_PAY_TO="$payee_addr" \
SANDBOX_PAYMENTS_NETWORK=eip155:84532 \
SANDBOX_PAYMENTS_ASSET="$usdc" \
SANDBOX_PAYMENTS_PRICE=0.005 \
SANDBOX_PAYMENTS_LEDGER="$work/ledger.db" \
  "$bin" serve "${config_args[@]}" >"$work/sandboxd.log" 2>&1 &
service_pid=$!
addr=""
for _ in $(seq 1 300); do
  addr="$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$work/sandboxd.log" | head -n1)"
  [ -n "$addr" ] && break
  kill -0 "$service_pid" 2>/dev/null || die "sandboxd exited at start"
  sleep 0.1
done
[ -n "$addr" ] || die "sandboxd did not listen within 30 s"
url="http://$addr"
node -e '
const url = process.argv[1] + "/v1/health";
const until = Date.now() + 60000;
(async () => {
  let last = "";
  while (Date.now() < until) {
    try { const r = await fetch(url); last = `${r.status} ${await r.text()}`; if (r.ok) return; } catch (e) { last = e.message; }
    await new Promise((r) => setTimeout(r, 200));
  }
  console.error(`sandboxd is not healthy: ${last}`); process.exit(1);
})();' "$url"
say "service   $url (onchain settlement, relayer 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266)"

balances() {
  local b
  b="$(chain balance --rpc "$rpc" "$payer_addr" "$payee_addr")"
  say "$1   payer $(usdc_of "$(field "$payer_addr" <<<"$b")"), payee $(usdc_of "$(field "$payee_addr" <<<"$b")")"
}
balances "before"

# 3. The paid call.
echo
printf "\$ sandboxd call --key-file payer.key --url %s/v1/code -c '%s'\n" "$url" "$code"
"$bin" call --key-file "$work/payer.key" --url "$url/v1/code" -c "$code"
echo

# 4. What happened on chain.
tx_json="$(chain transfers --rpc "$rpc" "$payee_addr")"
n="$(field transfers.length <<<"$tx_json")"
[ "$n" = 1 ] || die "expected one transfer to the payee, found $n"
tx="$(field transfers.0.tx <<<"$tx_json")"
receipt="$(chain tx --rpc "$rpc" "$tx")"
say "tx        $tx ($(field status <<<"$receipt"), block $(field block <<<"$receipt"), $(usdc_of "$(field transfers.0.value <<<"$tx_json")") payer -> payee)"
balances "after "
