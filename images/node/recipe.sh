# shellcheck shell=bash
# recipe.sh is the node image's recipe for images/build.sh (`build.sh IMAGE
# node`): Node.js 24 LTS from Debian forky, whose nodejs is 24 (bookworm's 18
# and trixie's 20 are past their upstream end). forky's libnode needs its
# glibc, so the image is a whole forky root, not bookworm plus packages
# (docs/design/runtimes.md, "The Node image").
#
# Its PID 1 is the supervisor (make supervisor: bin/sandbox-supervisor),
# which starts the JavaScript stub (stub.js, with node-rewrite.js beside
# it) warm; TypeScript runs on the same stub.

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
IMAGE_CMD='["/opt/sandbox/supervisor"]'
# The version of the protocol the supervisor speaks with the service
# (internal/runnerproto: Version).
RUNNER_PROTOCOL=7
# The supervisor is built outside images/ (make supervisor); its bytes are
# an input of the image.
node_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUPERVISOR=${SUPERVISOR:-$node_dir/../../bin/sandbox-supervisor}
INPUT_FILES=$SUPERVISOR
EXPECTED_SECONDS=150

# recipe_setup refuses a forky that has moved on (an image named for Node 24
# must not become another major silently), and installs the supervisor and
# the stub.
recipe_setup() {
  local version
  version=$(chroot "$root" /usr/bin/node --version)
  case "$version" in
    v24.*) log "node $version" ;;
    *) log "$SUITE serves Node $version, not 24: update the image's name and this check together"; exit 1 ;;
  esac
  install -D -m 0755 "$SUPERVISOR" "$root/opt/sandbox/supervisor"
  install -D -m 0644 "$node_dir/stub.js" "$root/opt/sandbox/stubs/node.js"
  install -D -m 0644 "$node_dir/node-rewrite.js" "$root/opt/sandbox/stubs/node-rewrite.js"
  # The stub's own modules, Debian's acorn and acorn-walk, load as it does.
  chroot "$root" /usr/bin/node -e 'require("/opt/sandbox/stubs/node-rewrite.js")'
}
