#!/usr/bin/env bash
# Smoke-run every atheris target for a bounded number of executions, in both builds.
#
#   fuzz/smoke.sh                 # from any directory
#   FUZZ_RUNS=20000 fuzz/smoke.sh # more executions per target and build
#   FUZZ_BUILDS=pure fuzz/smoke.sh
#   FUZZ_TARGETS="fuzz_wire_reader fuzz_roundtrip" fuzz/smoke.sh
#
# Environment:
#   PYTHON        interpreter (default: python); codec must be importable by it
#                 (pip install -e . in CI; PYTHONPATH=<repo> in a bare checkout)
#   FUZZ_RUNS     executions per target and build, seeds included (default 3000); the
#                 slower targets run a fraction of it (PURE_DIVISOR, COMPILED_DIVISOR below)
#   FUZZ_BUILDS   builds to run: "compiled pure" (default), "compiled" or "pure"
#   FUZZ_TARGETS  targets to run (default: all nine, in the order below)
#
# First checks that the seed corpora are what fuzz/make_corpus.py writes (which
# also runs every seed through its target's check()). Each run starts from
# fuzz/corpus/<target>/ and writes new inputs only to a temporary directory;
# crash artifacts go to fuzz/crashes/. Exits non-zero when a target finds a
# crash (or codec cannot be imported in a build). With the defaults the whole
# smoke takes about 2 minutes on a 2-core machine (both builds, 9 targets).
set -euo pipefail

if [[ $# -gt 0 ]]; then  # a target named here would be ignored: every target would run
    echo "smoke.sh takes no arguments; name targets with FUZZ_TARGETS=\"$*\"" >&2
    exit 2
fi

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python}"
base_runs="${FUZZ_RUNS:-3000}"
builds="${FUZZ_BUILDS:-compiled pure}"
default_targets="fuzz_varint fuzz_frame_decoder fuzz_wire_reader fuzz_struct_decode"
default_targets+=" fuzz_differential fuzz_roundtrip fuzz_buffer_lifetime fuzz_profiler_stream"
default_targets+=" fuzz_arrow"
read -r -a targets <<<"${FUZZ_TARGETS:-$default_targets}"
# The uncompiled struct and column targets run 10-40x slower than compiled ones, and the
# profiler stream target reads each input five ways (its stream reader is Python in both
# builds): fewer runs there keep the whole smoke well under 3 minutes.
declare -A PURE_DIVISOR=([fuzz_struct_decode]=2 [fuzz_differential]=2 [fuzz_roundtrip]=3
    [fuzz_profiler_stream]=10 [fuzz_arrow]=3)
declare -A COMPILED_DIVISOR=([fuzz_profiler_stream]=2)
crashes="$here/crashes"
mkdir -p "$crashes"

work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT

status=0
start_all=$(date +%s.%N)
if ! (cd "$work" && "$python" "$here/make_corpus.py" --check); then
    echo "FAIL  seed corpora out of date: run python fuzz/make_corpus.py" >&2
    status=1
fi
for build in $builds; do
    case "$build" in
        compiled) pure=0; want=True ;;
        pure) pure=1; want=False ;;
        *) echo "smoke.sh: unknown build '$build'" >&2; exit 2 ;;
    esac
    if ! got=$(cd "$work" && CODEC_PURE_PYTHON=$pure "$python" -c \
        'import codec; print(codec.COMPILED)' 2>&1); then
        echo "smoke.sh: cannot import codec with $python ($build build):" >&2
        echo "$got" >&2
        exit 2
    fi
    if [[ "$got" != "$want" ]]; then
        echo "smoke.sh: $build build requested, but codec.COMPILED is $got" \
            "(build the extension: python setup.py build_ext --inplace)" >&2
        exit 2
    fi
    for target in "${targets[@]}"; do
        runs="$base_runs"
        if [[ $build == pure && -n "${PURE_DIVISOR[$target]:-}" ]]; then
            runs=$((base_runs / PURE_DIVISOR[$target]))
        elif [[ $build == compiled && -n "${COMPILED_DIVISOR[$target]:-}" ]]; then
            runs=$((base_runs / COMPILED_DIVISOR[$target]))
        fi
        out="$work/new-$build-$target"
        log="$work/$build-$target.log"
        mkdir -p "$out"
        t0=$(date +%s.%N)
        set +e
        # Run from $work so that nothing libFuzzer writes lands in the checkout.
        (cd "$work" && CODEC_PURE_PYTHON=$pure "$python" "$here/$target.py" \
            -atheris_runs="$runs" -timeout=60 -rss_limit_mb=2048 \
            -artifact_prefix="$crashes/$build-$target-" \
            "$out" "$here/corpus/$target") >"$log" 2>&1
        rc=$?
        set -e
        t1=$(date +%s.%N)
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        rate=$(awk -v n="$runs" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", n / (b - a) }')
        if [[ $rc -eq 0 ]] && grep -q "^Done $runs in" "$log"; then
            echo "ok    $build  $target  $runs runs in ${secs}s (~$rate exec/s incl. startup)"
        else
            status=1
            echo "FAIL  $build  $target  (exit $rc) after ${secs}s; log tail:"
            tail -n 40 "$log" | sed 's/^/    /'
        fi
    done
done
end_all=$(date +%s.%N)
echo "total $(awk -v a="$start_all" -v b="$end_all" 'BEGIN { printf "%.1f", b - a }')s;" \
    "crash artifacts (if any): $crashes"
exit $status
