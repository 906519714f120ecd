#!/usr/bin/env bash
# docker-up.sh makes sure a Docker daemon answers. When none does and we are
# root on Debian, it installs docker.io (and gVisor's runsc), registers runsc
# as a second OCI runtime, and starts dockerd in the background.
set -euo pipefail

log() { printf 'docker-up: %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "no Docker daemon answers and this is not root."
  log "start Docker yourself (for example: sudo systemctl start docker), make sure"
  log "your user may use /var/run/docker.sock, then run this again."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v runsc >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "dockerd is not installed and apt-get is missing: install Docker Engine, then run this again."
    exit 1
  fi
  log "installing docker.io and runsc from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io runsc >/dev/null
fi

# Register gVisor as a second runtime. It must run with its own network off:
# a plain registration fails while setting up the sandbox's network.
mkdir -p /etc/docker
if [ ! -s /etc/docker/daemon.json ] && command -v runsc >/dev/null 2>&1; then
  cat > /etc/docker/daemon.json <<JSON
{
  "runtimes": {
    "runsc": { "path": "$(command -v runsc)", "runtimeArgs": ["--network=none"] }
  }
}
JSON
fi

log "starting dockerd (log: /var/log/sandboxd-dockerd.log)"
nohup dockerd >/var/log/sandboxd-dockerd.log 2>&1 &

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "Docker is up: $(docker version --format '{{.Server.Version}}')"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; last lines of its log:"
tail -n 20 /var/log/sandboxd-dockerd.log >&2 || true
exit 1
