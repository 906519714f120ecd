# shellcheck shell=bash
# recipe.sh is the data image's recipe for images/build.sh (`build.sh IMAGE
# python/data`): the python image's (sourced below) with numpy, pandas,
# matplotlib and scipy from Debian's packages, ready for a read-only root, a
# /tmp home and a one-CPU quota.

# shellcheck source=../recipe.sh
. "$(dirname "${BASH_SOURCE[0]}")/../recipe.sh"

# What the data image adds to python's: Debian's builds (no registry, no
# pip), one font for matplotlib, and the environment its libraries read at
# run time.
PACKAGES=$PACKAGES,python3-numpy,python3-pandas,python3-matplotlib,python3-scipy,fonts-dejavu-core
EXPECTED_SECONDS=420
# Build tools the Debian packages drag in through Depends (scipy needs
# pythran, which needs a C++ compiler and headers), and Tk (matplotlib's
# ImageTk); nothing imports them at run time, so they are purged.
DATA_PURGE="gcc-12 g++-12 cpp-12 gcc g++ cpp binutils binutils-x86-64-linux-gnu binutils-common
  libbinutils libctf0 libctf-nobfd0 libgprofng0 libasan8 liblsan0 libtsan2 libubsan1 libitm1 libcc1-0
  libisl23 libmpc3 libmpfr6 libgcc-12-dev libstdc++-12-dev libc6-dev libc-dev-bin linux-libc-dev
  libcrypt-dev libnsl-dev libtirpc-dev libexpat1-dev zlib1g-dev libboost-dev libboost1.74-dev libxsimd-dev
  libopenblas-dev libopenblas-pthread-dev python3-dev python3-all-dev python3.11-dev libpython3-dev
  libpython3-all-dev libpython3.11-dev perl perl-modules-5.36 libperl5.36
  python3-pythran python3-tk python3-pil.imagetk tk8.6-blt2.5 blt libtk8.6 libtcl8.6 libjs-jquery
  libjs-jquery-ui libjs-sphinxdoc libjs-underscore"
# One thread for BLAS and OpenMP: a run is capped at runtime.cpus (one CPU
# or less) by the CFS quota, so more threads only contend for that quota (and
# count against runtime.pids); OpenBLAS would otherwise start one per host core.
# Agg draws without a display; MPLCONFIGDIR is where recipe_setup leaves
# matplotlib's font cache, read-only at run time. SANDBOX_PRELOAD makes the
# runner (run.py) import these modules while the container is warm, before
# its program arrives, and save matplotlib's figures as /tmp/figure-<n>.png.
MPL_DIR=/opt/sandbox/matplotlib
DATA_ENV="MPLBACKEND=Agg MPLCONFIGDIR=$MPL_DIR OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 SANDBOX_PRELOAD=numpy,pandas,matplotlib,matplotlib.pyplot"

IMAGE_ENV="$IMAGE_ENV $DATA_ENV"

# recipe_setup makes the data image's rootfs ready to run read-only: the
# build tools purged, tests and caches trimmed, matplotlib's font cache built
# where it reads it, everything byte-compiled once, and the runner installed
# as python's recipe installs it.
recipe_setup() {
  # shellcheck disable=SC2086 # DATA_PURGE is a list of package names
  chroot "$root" /usr/bin/dpkg --purge --force-depends $DATA_PURGE >"$work/purge.log" 2>&1 || {
    tail -n 30 "$work/purge.log" >&2; exit 1; }
  rm -rf "$root"/usr/include/* "$root"/usr/share/matplotlib/mpl-data/sample_data
  find "$root/usr/lib/python3/dist-packages" -depth -type d \( -name tests -o -name __pycache__ \) \
    -exec rm -rf {} +
  # matplotlib 3.6 takes its config and cache directory only if it can write
  # there, else it warns and rebuilds its font cache in a temporary directory
  # at every import (half a second, written into the program's /tmp). The
  # root is read-only, so MPL_DIR is accepted as long as it is a directory.
  local init=$root/usr/lib/python3/dist-packages/matplotlib/__init__.py
  local check='        if os.access(str(configdir), os.W_OK) and configdir.is_dir():'
  [ "$(grep -cxF "$check" "$init")" = 1 ] || { log "matplotlib's cache-dir check has changed: see recipe_setup in $RECIPE/recipe.sh"; exit 1; }
  sed -i "s/^        if os.access(str(configdir), os.W_OK) and configdir.is_dir():\$/        if configdir.is_dir():/" "$init"
  mkdir -p "$root$MPL_DIR"
  # The first import builds the font cache; it must do so silently, as every
  # later import (read-only) must.
  local said
  # shellcheck disable=SC2086 # DATA_ENV is a list of assignments
  said=$(chroot "$root" /usr/bin/env $DATA_ENV /usr/bin/python3 -I -c 'import matplotlib.pyplot' 2>&1) &&
    [ -z "$said" ] && ls "$root$MPL_DIR"/fontlist-v*.json >/dev/null || {
    log "matplotlib did not build its font cache silently: $said"; exit 1; }
  chroot "$root" /usr/bin/python3 -m compileall -q /usr/lib/python3/dist-packages >/dev/null 2>&1 || true
  python_runner
}
