#!/usr/bin/env bash
# One night of a flagsweep nightly job: sweep TARGET into a folder of its own, put its
# summary where the CI shows it, then let `flagsweep history --check` decide the job's status.
# The workflows in github/ and gitlab/ call it; docs/nightly.md explains the set-up.
#
#   nightly.sh [--gate-only] [TARGET [RUN_OPTION...]]
#
# TARGET (default $FLAGSWEEP_TARGET, else gzip) is a shipped target's name or a target folder;
# RUN_OPTIONs go to `flagsweep run` as given (after those of $FLAGSWEEP_RUN_OPTIONS).
# --gate-only judges the night $FLAGSWEEP_NIGHT again without sweeping (e.g. in shadow mode,
# or at another threshold).
#
# Environment (all optional):
#   FLAGSWEEP_TARGET       the target when no TARGET is given                  [gzip]
#   FLAGSWEEP_RECIPE       --recipe for the sweep                              [flagsweep's: olevels]
#   FLAGSWEEP_COMPILERS    compilers, space-separated ("gcc clang")            [the recipe's]
#   FLAGSWEEP_THRESHOLD    --threshold in %, for the sweep and the gate        [flagsweep's: 1]
#   FLAGSWEEP_RUN_OPTIONS  more `flagsweep run` options, split on spaces (no quoting inside;
#                          pass an option with spaces as a RUN_OPTION instead)
#   FLAGSWEEP_GATE         check: the gate's exit code is the job's; shadow: say what the gate
#                          would have done and pass                            [check]
#   FLAGSWEEP_OUT          the folder of the nights                            [reports/nightly]
#   FLAGSWEEP_NIGHT        this night's folder name in it                      [UTC stamp]
#   FLAGSWEEP_DB           the store, as for flagsweep (an SQLite file or a PostgreSQL URL)
#   FLAGSWEEP_CACHE        flagsweep's caches (builds, inputs, the kept reference binary)
#   FLAGSWEEP_DASHBOARD    the folder of the dashboard across nights, drawn from the store
#                          after the gate; "none" for none                     [OUT/dashboard]
#   GITHUB_STEP_SUMMARY    set by GitHub Actions: summary.md and the gate's words go there
#
# Writes OUT/NIGHT/ (the run folder: index.html, summary.md, junit.xml, results.json, ...)
# and in it history-junit.xml and gate.txt (what the gate said), then the dashboard (a
# static site of every night in the store; one that cannot be drawn is said, and changes no
# exit code). Exits with the gate's status:
# 0 pass, 1 a regression, 3 the night cannot be checked; with a sweep that failed, the sweep's
# own (2 an error, 3 stopped early because the machine was busy); 2 on a bad setting here.
# It installs nothing and runs nothing but `flagsweep` from PATH.
set -euo pipefail

die() {
    echo "nightly.sh: $*" >&2
    exit 2
}

gate_only=no
if [ "${1:-}" = --gate-only ]; then
    gate_only=yes
    shift
fi
target="${1:-${FLAGSWEEP_TARGET:-gzip}}"
[ $# -gt 0 ] && shift
gate="${FLAGSWEEP_GATE:-check}"
out="${FLAGSWEEP_OUT:-reports/nightly}"
threshold="${FLAGSWEEP_THRESHOLD:-}"

case "$gate" in
    check|shadow) ;;
    *) die "FLAGSWEEP_GATE=$gate: expected check or shadow" ;;
esac
if [ "$gate_only" = yes ] && [ -z "${FLAGSWEEP_NIGHT:-}" ]; then
    die "--gate-only: set FLAGSWEEP_NIGHT to the night to judge again (a folder in $out)"
fi
night_name="${FLAGSWEEP_NIGHT:-$(date -u +%Y%m%dT%H%M%SZ)}"
# The night is a folder inside OUT, never a path elsewhere.
case "$night_name" in
    ""|.|..|*/*) die "FLAGSWEEP_NIGHT=$night_name: expected a folder name without /" ;;
esac
command -v flagsweep >/dev/null || die "flagsweep is not on PATH (pip install it first)"
night="$out/$night_name"
# flagsweep wants an SQLite store's folder to exist; on a first night nothing has made it.
case "${FLAGSWEEP_DB:-}" in
    sqlite:///*) mkdir -p "$(dirname "${FLAGSWEEP_DB#sqlite:///}")" ;;
esac

# The step summary: GitHub's job page shows the file it names; elsewhere (GitLab) the log.
show() {
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        cat "$@" >>"$GITHUB_STEP_SUMMARY"
    else
        cat "$@"
    fi
}

sweep() {
    local options=() compilers=() extra=() compiler
    [ -n "${FLAGSWEEP_RECIPE:-}" ] && options+=(--recipe "$FLAGSWEEP_RECIPE")
    # Split on spaces only: no file names globbed, no quoting evaluated.
    read -r -a compilers <<<"${FLAGSWEEP_COMPILERS:-}"
    for compiler in "${compilers[@]}"; do
        options+=(--compiler "$compiler")
    done
    [ -n "$threshold" ] && options+=(--threshold "$threshold")
    read -r -a extra <<<"${FLAGSWEEP_RUN_OPTIONS:-}"
    mkdir -p "$out"
    local status=0
    flagsweep run "$target" --out "$night" "${options[@]}" "${extra[@]}" "$@" || status=$?
    if [ -f "$night/summary.md" ]; then
        show "$night/summary.md"
    fi
    return "$status"
}

judge() {
    local options=(--check --junit "$night/history-junit.xml")
    [ "$gate" = shadow ] && options+=(--shadow)
    [ -n "$threshold" ] && options+=(--threshold "$threshold")
    local status=0
    flagsweep history "$target" "${options[@]}" >"$night/gate.txt" 2>&1 || status=$?
    cat "$night/gate.txt"
    {
        printf '\n### The gate: flagsweep history --check%s (exit %s)\n\n' \
            "$([ "$gate" = shadow ] && echo ' --shadow')" "$status"
        printf '~~~text\n'
        cat "$night/gate.txt"
        printf '~~~\n'
    } >"$night/gate.md"
    # The log has it already; GitHub's job page gets it too.
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        cat "$night/gate.md" >>"$GITHUB_STEP_SUMMARY"
    fi
    return "$status"
}

# The dashboard follows the gate and never decides the job: a night's status is the gate's.
dashboard() {
    local folder="${FLAGSWEEP_DASHBOARD:-$out/dashboard}" options=()
    [ "$folder" = none ] && return 0
    [ -n "$threshold" ] && options+=(--threshold "$threshold")
    if flagsweep dashboard --out "$folder" "${options[@]}" >/dev/null; then
        echo "nightly.sh: the dashboard: $folder/index.html" >&2
    else
        echo "nightly.sh: the dashboard was not drawn (above); the gate's status stands" >&2
    fi
}

wrote() {
    local f files=()
    for f in index.html summary.md junit.xml results.json history-junit.xml gate.txt gate.md; do
        if [ -e "$night/$f" ]; then
            files+=("$night/$f")
        fi
    done
    if [ ${#files[@]} -eq 0 ]; then
        echo "nightly.sh: wrote nothing in $night/" >&2
    else
        echo "nightly.sh: wrote" >&2
        printf '  %s\n' "${files[@]}" >&2
    fi
}

if [ "$gate_only" = no ]; then
    status=0
    sweep "$@" || status=$?
    if [ "$status" -ne 0 ]; then
        wrote
        echo "nightly.sh: the sweep exited $status; no gate without a complete night" >&2
        exit "$status"
    fi
elif [ ! -d "$night" ]; then
    die "--gate-only: no night $night to judge"
fi
status=0
judge || status=$?
dashboard
wrote
echo "nightly.sh: gate ($gate) exited $status" >&2
exit "$status"
