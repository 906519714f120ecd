# shellcheck shell=bash
# recipe.sh is the node image's recipe for images/build.sh (`build.sh IMAGE
# node`): Node.js 24 LTS from Debian forky, whose nodejs is 24 (bookworm's 18
# and trixie's 20 are past their upstream end). forky's libnode needs its
# glibc, so the image is a whole forky root, not bookworm plus packages
# (docs/design/runtimes.md, "The Node image").
#
# The image has no runner yet: its command is node itself and it carries no
# io.sandboxd.runner label, so the service refuses it (Health names the
# protocol it lacks) until the supervisor and the JavaScript stub join it.

SUITE=${SUITE:-forky}
# jq and bc are for Bash's programs, as in the python image.
PACKAGES=nodejs,jq,bc
# What nodejs drags in through Depends and no program needs: corepack (a
# package-manager shim that downloads package managers, useless without a
# network) and the package tooling.
PURGE="node-corepack apt libapt-pkg7.0 sqv"
# TypeScript reaches the image as JavaScript (the host transpiles it), so
# it needs javascript; bash is Debian's, in every root.
LANGUAGES=javascript,typescript,bash
IMAGE_ENV="HOME=/tmp LANG=C.UTF-8 NODE_DISABLE_COLORS=1 NO_COLOR=1 SANDBOX_LANGUAGES=$LANGUAGES"
IMAGE_CMD='["/usr/bin/node"]'
EXPECTED_SECONDS=150

# recipe_setup refuses a forky that has moved on: an image named for Node 24
# must not become another major silently.
recipe_setup() {
  local version
  version=$(chroot "$root" /usr/bin/node --version)
  case "$version" in
    v24.*) log "node $version" ;;
    *) log "$SUITE serves Node $version, not 24: update the image's name and this check together"; exit 1 ;;
  esac
}
