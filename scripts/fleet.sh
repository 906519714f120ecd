#!/usr/bin/env bash
# fleet.sh: a try-out fleet on one machine (`make fleet`): a PostgreSQL ledger in .fleet/pg and
# three sandboxd replicas on 127.0.0.1:8081..8083 (metrics on 127.0.0.1:9091..9093), each with its
# own runtime.instance and payments.replica_id, all on the one Docker daemon. Free mode unless the
# environment turns payments on (SANDBOX_PAYMENTS_ENABLED=true, SANDBOX_PAYMENTS_PAY_TO=...); the
# ledger is shared either way, so `sandboxd ledger stats` reads it. Ctrl-C stops everything.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.fleet"
port=${FLEET_PG_PORT:-55432}
mkdir -p "$state"

url=$("$root/scripts/pg.sh" start "$state/pg" "$port")
# The fleet secret signs the calls one replica forwards to the replica that holds their session:
# 64 hex digits (256 bits, as openssl rand -hex 32 writes them), or no replica starts.
secret="$state/fleet.secret"
[ -s "$secret" ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret")
chmod 600 "$secret"
pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  "$root/scripts/pg.sh" stop "$state/pg" || true
  echo "fleet: stopped" >&2
  exit 0
}
trap stop INT TERM EXIT

# start_replica I starts replica I in the background; its pid goes in pids[I].
start_replica() {
  local i=$1
  SANDBOX_SERVER_ADDR="127.0.0.1:808$i" \
  SANDBOX_SERVER_ADVERTISE_URL="http://127.0.0.1:808$i" \
  SANDBOX_SERVER_FLEET_SECRET_FILE="$secret" \
  SANDBOX_SERVER_METRICS_ADDR="127.0.0.1:909$i" \
  SANDBOX_RUNTIME_INSTANCE="fleet$i" \
  SANDBOX_RUNTIME_POOL_SIZE="${FLEET_POOL_SIZE:-2}" \
  SANDBOX_PAYMENTS_LEDGER="$url" \
  SANDBOX_PAYMENTS_REPLICA_ID="$(hostname)/fleet$i" \
  SANDBOX_SERVER_PUBLIC_URL="${FLEET_PUBLIC_URL:-http://127.0.0.1:808$i}" \
  SANDBOX_SERVER_TRUSTED_PROXIES="127.0.0.1${FLEET_TRUSTED_PROXIES:+,$FLEET_TRUSTED_PROXIES}" \
    "$root/bin/sandboxd" serve --config "$root/config.yaml" 2>>"$state/replica$i.log" &
  pids[$i]=$!
}
for i in 1 2 3; do start_replica "$i"; done

cat >&2 <<MSG
fleet: three replicas on http://127.0.0.1:8081 :8082 :8083 (logs in .fleet/replica*.log),
       metrics on http://127.0.0.1:9091/metrics :9092 :9093, ledger $(printf '%s' "$url" | sed 's/:[^:@]*@/:xxxxx@/')
       try:  curl -s 127.0.0.1:8082/v1/code -d '{"code":"print(6*7)"}'
             id=\$(curl -s -X POST 127.0.0.1:8081/v1/sessions | sed 's/.*"session_id":"\\([^"]*\\)".*/\\1/')
             curl -s 127.0.0.1:8082/v1/sessions/\$id/code -d '{"code":"x = 41"}'   # forwarded to :8081
             curl -s 127.0.0.1:8083/v1/sessions/\$id/code -d '{"code":"x + 1"}'
             SANDBOX_PAYMENTS_LEDGER='$url' bin/sandboxd ledger sessions
             SANDBOX_PAYMENTS_LEDGER='$url' bin/sandboxd ledger stats
       a load balancer in front: deploy/nginx.conf, then FLEET_PUBLIC_URL=<its URL> names the resource
       payers pay for on every replica, and FLEET_TRUSTED_PROXIES=<its address> the peers whose
       X-Forwarded-* are read, beside 127.0.0.1 (the replicas, which forward only to listed addresses).
       Ctrl-C stops the fleet and PostgreSQL.
MSG
# A replica that dies (try kill -9 on one) is restarted after FLEET_RESTART_AFTER seconds
# (default 45, past the 30 s lease): meanwhile the others end its sessions once its lease
# runs out, and on its return it reaps its containers.
restart_after=${FLEET_RESTART_AFTER:-45}
while true; do
  sleep 1
  for i in 1 2 3; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      wait "${pids[$i]}" 2>/dev/null || true
      echo "fleet: replica $i exited (see .fleet/replica$i.log); restarting it in ${restart_after}s" >&2
      (sleep "$restart_after") && start_replica "$i" && echo "fleet: replica $i restarted" >&2
    fi
  done
done
