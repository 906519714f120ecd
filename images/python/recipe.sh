# shellcheck shell=bash
# recipe.sh is the python image's recipe for images/build.sh (`build.sh
# IMAGE python`): python3 and its standard library from Debian bookworm,
# the runner (run.py), jq and bc for Bash's programs, nothing else.
# python/data's recipe builds on it.

SUITE=${SUITE:-bookworm}
PACKAGES=python3-minimal,libpython3.11-stdlib,jq,bc
# apt is package tooling no program needs.
PURGE=apt
LANGUAGES=python
# The version of the protocol run.py speaks with the service
# (internal/runnerproto: Version); the service refuses an image with
# another. The data image's recipe takes it from here.
RUNNER_PROTOCOL=7
# The image's environment. SANDBOX_LANGUAGES (runnerproto.EnvLanguages) is
# not in it: run.py does not read it and would leave it in every program's
# environment; the supervisor that replaces run.py reads it.
IMAGE_ENV="HOME=/tmp LANG=C.UTF-8 PYTHONIOENCODING=utf-8 PYTHONDONTWRITEBYTECODE=1"
IMAGE_CMD='["/usr/bin/python3", "-I", "/opt/sandbox/run.pyc"]'
EXPECTED_SECONDS=90
python_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# recipe_setup leaves the standard library alone: Debian's dist-packages
# are emptied, and the runner installed.
recipe_setup() {
  rm -rf "$root"/usr/lib/python3/dist-packages/*
  python_runner
}

# python_runner installs run.py and byte-compiles the standard library once,
# so no run pays for it, and the runner too: the image starts run.pyc, which
# a container would otherwise compile from run.py at every start (14-20 ms
# of CPU on a slow host, some 3 % of a container's whole cycle;
# BENCHMARKS.md, 2026-12-04).
python_runner() {
  install -D -m 0644 "$python_dir/run.py" "$root/opt/sandbox/run.py"
  chroot "$root" /usr/bin/python3 -m compileall -q /usr/lib/python3.11 >/dev/null 2>&1 || true
  chroot "$root" /usr/bin/python3 -c 'import py_compile; py_compile.compile("/opt/sandbox/run.py", cfile="/opt/sandbox/run.pyc", doraise=True)'
}
