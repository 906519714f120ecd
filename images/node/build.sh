#!/usr/bin/env bash
# build.sh builds a Node.js image for the sandbox without any container
# registry, the way images/python/build.sh builds Python's: a minimal Debian
# rootfs (debootstrap of forky, whose nodejs is 24 LTS; bookworm's 18 and
# trixie's 20 are past their upstream end), a non-root user, imported into
# Docker as IMAGE.
#
#   build.sh [IMAGE]
#
# A prototype (docs/design/runtimes.md, "The Node image"): it has no runner
# yet, so its command is node itself, and nothing in `make test` uses it.
# The production build folds into images/python/build.sh's machinery (status
# file, lock, partial tag, cleanup on interrupt); this script keeps only
# what measuring the image needs: the rootfs, the trim, the import, and the
# input hash that skips an unchanged image.
#
# forky is Debian's testing suite: the mirror's Release for it may be past
# its Valid-Until, which apt refuses and debootstrap does not check (it
# verifies the signature only). The host's debootstrap may predate forky's
# script: sid's is the same recipe.
set -euo pipefail

IMAGE=${1:-sandbox-node:24}
SUITE=${SUITE:-forky}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=nodejs
# What nodejs drags in through Depends and no program needs: corepack (a
# package-manager shim that downloads package managers, useless without a
# network) and the package tooling. Purged with --force-depends.
PURGE="node-corepack apt libapt-pkg7.0 sqv"
SANDBOX_UID=10001
here=$(cd "$(dirname "$0")" && pwd)
DEBOOTSTRAP_CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/sandboxd/debootstrap}

log() { printf 'image: %s\n' "$*" >&2; }

inputs=$(cat "$here/build.sh"; echo "$SUITE $MIRROR $PACKAGES $PURGE $SANDBOX_UID")
hash=$(printf '%s' "$inputs" | sha256sum | cut -c1-16)
have=$(docker image inspect --format '{{ index .Config.Labels "io.sandboxd.inputs" }}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$hash" ]; then
  log "$IMAGE is up to date (inputs $hash)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { log "building $IMAGE needs root (debootstrap)"; exit 1; }

script=/usr/share/debootstrap/scripts/$SUITE
[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid

started=$SECONDS
work=$(mktemp -d /tmp/sandbox-node-image.XXXXXX)
root=$work/rootfs
cleanup() {
  grep -o " $root/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

mkdir -p "$DEBOOTSTRAP_CACHE"
t=$SECONDS
log "debootstrap $SUITE ($PACKAGES) into $root"
(
  flock 8
  debootstrap --variant=minbase --cache-dir="$DEBOOTSTRAP_CACHE" --include="$PACKAGES" \
    "$SUITE" "$root" "$MIRROR" "$script" >"$work/debootstrap.log" 2>&1
) 8>>"$DEBOOTSTRAP_CACHE/.lock" || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
log "debootstrap took $((SECONDS - t)) s"
t=$SECONDS

# shellcheck disable=SC2086 # PURGE is a list of package names
chroot "$root" /usr/bin/dpkg --purge --force-remove-essential --force-depends $PURGE >"$work/purge.log" 2>&1 ||
  { tail -n 30 "$work/purge.log" >&2; exit 1; }
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
  "$root"/var/log/* "$root"/tmp/*

echo "sandbox:x:$SANDBOX_UID:$SANDBOX_UID:sandbox:/tmp:/usr/sbin/nologin" >> "$root/etc/passwd"
echo "sandbox:x:$SANDBOX_UID:" >> "$root/etc/group"
echo "sandbox:*:19000:0:99999:7:::" >> "$root/etc/shadow"

# forky moves: an image named for Node 24 must not become another major silently.
version=$(chroot "$root" /usr/bin/node --version)
case "$version" in
  v24.*) ;;
  *) log "$SUITE serves Node $version, not 24: update IMAGE and this check together"; exit 1 ;;
esac
log "node $version; trimming took $((SECONDS - t)) s"
t=$SECONDS
tar -C "$root" -c . | docker import \
  --change "USER $SANDBOX_UID:$SANDBOX_UID" \
  --change "WORKDIR /tmp" \
  --change "ENV HOME=/tmp LANG=C.UTF-8 NODE_DISABLE_COLORS=1 NO_COLOR=1" \
  --change 'CMD ["/usr/bin/node"]' \
  --change "LABEL io.sandboxd.inputs=$hash" \
  - "$IMAGE" >/dev/null
log "importing took $((SECONDS - t)) s"
log "built $IMAGE (node $version, inputs $hash) in $((SECONDS - started)) s:" \
  "$(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec)"
