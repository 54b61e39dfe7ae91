#!/usr/bin/env bash
# Build the compiled core with clang + AddressSanitizer + UndefinedBehaviorSanitizer, out of
# tree, and run the atheris targets against it (atheris' native-extension recipe).
#
#   fuzz/sanitizers.sh                    # build, then every target for FUZZ_SECONDS each
#   fuzz/sanitizers.sh build              # build only
#   fuzz/sanitizers.sh run <target> [libFuzzer flags] [corpus dirs]   # one target, as given
#   fuzz/sanitizers.sh all                # every target, FUZZ_SECONDS each (build first)
#   fuzz/sanitizers.sh test [pytest args] # the test suite against the sanitized build
#   fuzz/sanitizers.sh env                # print the environment a manual run needs
#
# Environment:
#   PYTHON        interpreter (default: python); atheris must be installed for it
#   CC            C compiler (default: clang); it must accept -fsanitize=fuzzer-no-link
#   SAN_BUILD     build directory (default: /tmp/asan-build); the checkout is never touched
#   FUZZ_SECONDS  seconds per target for "all" (default 300)
#   FUZZ_TARGETS  targets for "all" (default: every fuzz/fuzz_*.py)
#   FUZZ_NICE     nice level of the runs (default 19)
#   FUZZ_TIMEOUT  seconds one input may take before libFuzzer reports a timeout (default 25).
#                 libFuzzer measures wall-clock time: a run at nice 19 beside busy work
#                 can be starved that long on an input that takes 0.1 s alone; raise it
#                 for runs that share the machine, and rerun any timeout input alone
#   FUZZ_LOGS     where "all" writes one log per target (default: $SAN_BUILD/logs)
#   SAN_EXTRA_CFLAGS  appended to the sanitizer flags, e.g. -fno-sanitize=shift-base to
#                 keep fuzzing past a reported, still open UBSan finding (use another
#                 SAN_BUILD for such a build)
#
# How it works. codec's .py/.pyi/.pxd sources and setup.py are copied to $SAN_BUILD and
# compiled there in place, with CC=clang and
#   -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined
# (fuzzer-no-link: libFuzzer edge coverage of the C code, so atheris steers by the
# compiled core's branches too). The runs put $SAN_BUILD first on PYTHONPATH (the
# editable install's finder comes after it) and preload atheris' asan_with_fuzzer.so,
# which holds the ASan and UBSan runtimes together with libFuzzer. PYTHONMALLOC=malloc
# sends every Python allocation through malloc, so ASan's redzones also guard the
# bytes/bytearray/memoryview storage the core reads and writes (pymalloc would hide a
# small overflow inside its arenas). detect_leaks=0: CPython does not free everything at
# exit, so LeakSanitizer reports are noise. A run checks that codec really is the
# sanitized build before fuzzing (codec.__file__ under $SAN_BUILD, codec.COMPILED).
#
# Crash artifacts go to fuzz/crashes/asan-<target>-*; new corpus inputs to
# $SAN_BUILD/corpus/<target>/ (the seed corpus fuzz/corpus/<target>/ is read only).
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname -- "$here")"
python="${PYTHON:-python}"
cc="${CC:-clang}"
build="${SAN_BUILD:-/tmp/asan-build}"
seconds="${FUZZ_SECONDS:-300}"
nice_level="${FUZZ_NICE:-19}"
timeout_seconds="${FUZZ_TIMEOUT:-25}"
logs="${FUZZ_LOGS:-$build/logs}"
san_flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
san_flags+=" -fno-omit-frame-pointer -g ${SAN_EXTRA_CFLAGS:-}"

if [[ "$build" == "$repo" || "$build" == "$repo/"* ]]; then
    echo "sanitizers.sh: SAN_BUILD must be outside the checkout ($repo)" >&2
    exit 2
fi

preload() {
    local dir
    dir="$("$python" -c 'import atheris; print(atheris.path())')"
    if [[ ! -f "$dir/asan_with_fuzzer.so" ]]; then
        echo "sanitizers.sh: $dir/asan_with_fuzzer.so not found (atheris too old?)" >&2
        exit 2
    fi
    echo "$dir/asan_with_fuzzer.so"
}

sources() {
    # The package's sources, relative to the checkout: what a build copies.
    (cd "$repo" && find codec -name '*.py' -o -name '*.pyi' -o -name '*.pxd' -o -name '*.proto' \
        -o -name py.typed)
}

is_current() {
    # Whether the build was made from the checkout's sources as they are now.
    [[ -f "$build/setup.py" ]] || return 1
    local source
    while read -r source; do
        cmp -s "$repo/$source" "$build/$source" || return 1
    done < <(sources)
}

do_build() {
    command -v "$cc" >/dev/null || {
        echo "sanitizers.sh: $cc not found (Debian/Ubuntu: apt-get install -y clang)" >&2
        exit 2
    }
    # Sources only (the package and its subpackages): stale .c/.so files must not survive.
    rm -rf "$build/codec"
    sources | while read -r source; do
        mkdir -p "$build/$(dirname -- "$source")"
        cp "$repo/$source" "$build/$source"
    done
    cp "$repo/setup.py" "$repo/pyproject.toml" "$build/"
    echo "== building the sanitized core in $build ($("$cc" --version | head -n 1))"
    (
        cd "$build"
        CC="$cc" LDSHARED="$cc -shared" CFLAGS="$san_flags" LDFLAGS="$san_flags" \
            CODEC_REQUIRE_COMPILED=1 CODEC_PURE_PYTHON=0 \
            "$python" setup.py build_ext --inplace --force >"$build/build.log" 2>&1
    ) || {
        tail -n 40 "$build/build.log" >&2
        exit 1
    }
    local count
    count=$(find "$build/codec" -name '*.so' | wc -l)
    echo "   $count extension modules built (log: $build/build.log)"
    # Every module must carry the instrumentation, or the run below is not what it claims.
    for so in $(find "$build/codec" -name '*.so'); do
        if [[ $(nm -D --undefined-only "$so" | grep -c __asan_report) -eq 0 ]]; then
            echo "sanitizers.sh: $so is not ASan-instrumented" >&2
            exit 1
        fi
    done
}

run_env() {
    # Print (or apply) the environment of a sanitized run.
    echo "LD_PRELOAD=$(preload)"
    echo "PYTHONPATH=$build"
    echo "PYTHONMALLOC=malloc"
    echo "CODEC_PURE_PYTHON=0"
    echo "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:handle_abort=1:symbolize=1"
    echo "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
}

# Fill the caller's env_args from run_env, move to $build and refuse to go on unless
# codec there is the sanitized build. From $build, the checkout (the current directory,
# first on sys.path) cannot shadow the sanitized modules, and libFuzzer writes nothing
# into the checkout.
enter_build() {
    # A build older than the checkout would test code that is no longer there.
    if ! is_current; then
        echo "== the sanitized build is not of the checkout's sources: building it again"
        do_build
    fi
    while IFS= read -r line; do env_args+=("$line"); done < <(run_env)
    cd "$build"
    env "${env_args[@]}" "$python" - "$build" <<'EOF' || exit 2
import sys, codec
build = sys.argv[1]
if not (codec.COMPILED and codec.__file__.startswith(build)):
    sys.exit(f"sanitizers.sh: codec is {codec.__file__} (COMPILED={codec.COMPILED}), "
             f"not the sanitized build in {build}; run 'fuzz/sanitizers.sh build'")
EOF
}

do_run() {
    local target="$1"
    shift
    [[ -f "$here/$target.py" ]] || { echo "sanitizers.sh: no target fuzz/$target.py" >&2; exit 2; }
    # Corpus directories and crash files given relative to the caller's directory.
    local args=()
    for arg in "$@"; do
        if [[ "$arg" != -* && -e "$arg" ]]; then
            args+=("$(cd -- "$(dirname -- "$arg")" && pwd)/$(basename -- "$arg")")
        else
            args+=("$arg")
        fi
    done
    local env_args=()
    enter_build
    mkdir -p "$here/crashes"
    exec env "${env_args[@]}" nice -n "$nice_level" "$python" "$here/$target.py" \
        -artifact_prefix="$here/crashes/asan-$target-" "${args[@]}"
}

do_all() {
    local targets
    if [[ -n "${FUZZ_TARGETS:-}" ]]; then
        read -r -a targets <<<"$FUZZ_TARGETS"
    else
        targets=()
        for f in "$here"/fuzz_*.py; do targets+=("$(basename "$f" .py)"); done
    fi
    mkdir -p "$logs"
    local status=0
    # One target at a time: one core.
    for target in "${targets[@]}"; do
        mkdir -p "$build/corpus/$target"
        local log="$logs/$target.log"
        echo "== $target: ${seconds}s under ASan+UBSan (log: $log)"
        local timer=()
        if [[ -x /usr/bin/time ]]; then  # CPU seconds of the run (GNU time)
            timer=(/usr/bin/time -f "cpu_seconds %U+%S wall_seconds %e" -o "$log.time")
        fi
        set +e
        ("${timer[@]}" "$0" run "$target" -max_total_time="$seconds" -timeout="$timeout_seconds" \
            -rss_limit_mb=2560 -malloc_limit_mb=2560 -print_final_stats=1 \
            "$build/corpus/$target" "$here/corpus/$target") >"$log" 2>&1
        local rc=$?
        set -e
        grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)" \
            "$log" | sed 's/^/   /' || true
        [[ -f "$log.time" ]] && sed 's/^/   /' "$log.time"
        echo "   corpus: $(find "$build/corpus/$target" -type f | wc -l) files," \
            "$(find "$build/corpus/$target" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')" \
            "bytes in $build/corpus/$target"
        if [[ $rc -ne 0 ]]; then
            status=1
            echo "   FINDING (exit $rc); log tail:"
            tail -n 30 "$log" | sed 's/^/     /'
        fi
    done
    return $status
}

do_test() {
    # The whole suite (default) or the given pytest arguments, with the sanitized core.
    # test_build.py checks how the checkout's own build is selected, and memray cannot
    # trace under the preloaded sanitizer runtime: both are left out by default.
    # --capture=sys leaves file descriptor 2 alone, so a sanitizer's report reaches the
    # log instead of dying with pytest's captured output.
    local args=() paths=0
    for arg in "$@"; do
        if [[ "$arg" != -* && -e "${arg%%::*}" ]]; then
            args+=("$(cd -- "$(dirname -- "$arg")" && pwd)/$(basename -- "$arg")")
            paths=1
        else
            args+=("$arg")
        fi
    done
    if [[ $paths -eq 0 ]]; then
        args=("$repo/tests" --ignore="$repo/tests/test_build.py" -k "not memray" "${args[@]}")
    fi
    local env_args=()
    enter_build
    exec env "${env_args[@]}" nice -n "$nice_level" "$python" -m pytest -p no:cacheprovider \
        --rootdir "$repo" -c "$repo/pyproject.toml" --capture=sys "${args[@]}"
}

case "${1:-default}" in
    build) do_build ;;
    run)
        shift
        [[ $# -ge 1 ]] || { echo "usage: $0 run <target> [flags]" >&2; exit 2; }
        do_run "$@"
        ;;
    all) do_all ;;
    test)
        shift
        do_test "$@"
        ;;
    env) run_env ;;
    default)
        do_build
        do_all
        ;;
    *)
        echo "usage: $0 [build | run <target> [flags] | all | test [pytest args] | env]" >&2
        exit 2
        ;;
esac
