#!/usr/bin/env bash
# Builds the SupportWire and SupportSession fuzz targets with libFuzzer + AddressSanitizer and runs them.
#
#   ./run.sh [seconds] [target...]   fuzz each target for `seconds` (default 60); all targets if none named
#   ./run.sh --regress [target...]   run each target once over every file in FailCases/ and the seed corpus; no
#                                    fuzzing (for CI). Exit status 1 if any input traps.
#
# Environment: FUZZ_JOBS=N run up to N targets at once (default 1), FUZZ_ARGS="..." extra libFuzzer flags,
#              VECTOR_WAIT=seconds to wait for protocol/vectors/*.jsonl, FUZZ_MAIN_PACKAGE=path of the
#              RemoteSupport package to fuzz (default: the parent folder; see Package.swift).
# Always a release (-O) build: at -Onone this Swift does not insert the SanitizerCoverage instrumentation, so
# libFuzzer would run blind ("no interesting inputs"). Overflow and bounds checks stay on at -O.
# A crash, leak, timeout or OOM file found while fuzzing is copied to FailCases/<target>/ and the script exits 1.
# Scratch (gitignored): .build/ and corpus-work/{seed,<target>,artifacts,logs}/.
set -uo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)

ALL_TARGETS=(FuzzWireDecode FuzzWireRoundTrip FuzzSessionMachines FuzzCodeRegistry)
MODE=fuzz
SECONDS_PER_TARGET=60
if [[ ${1:-} == --regress ]]; then MODE=regress; shift
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then SECONDS_PER_TARGET=$1; shift
elif [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,12p' "$0"; exit 0
fi
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL_TARGETS[@]}")
for target in "${TARGETS[@]}"; do
    [[ -d Sources/$target ]] || { echo "run.sh: unknown target $target (have: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

CONFIG=release
echo "== building (${CONFIG}, -sanitize=fuzzer,address)"
# ld.gold prints hundreds of harmless "Cannot export local symbol '__asan_…'" warnings: filtered out.
build() {
    # The coverage kinds are named explicitly: with -sanitize=fuzzer alone, some builds on this toolchain came out
    # without SanitizerCoverage (no "inline 8-bit counters"; seen 8 clean rebuilds in a row on a loaded machine).
    swift build -c "$CONFIG" --sanitize=fuzzer --sanitize=address \
        -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp --build-path "$HERE/.build" 2>&1 \
        | grep -v "ld.gold: warning: Cannot export local symbol"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "run.sh: build failed" >&2; exit 2; }
}
# Whether every target's libFuzzer registered its coverage counters ("Loaded N modules"). Seen on this toolchain:
# now and then a build links without them, and the fuzzer then runs blind; a clean rebuild fixes it.
instrumented() {
    local target
    for target in "${ALL_TARGETS[@]}"; do
        local banner
        banner=$("$BIN/$target" -runs=0 2>&1 || true)  # captured, not piped: grep -q would SIGPIPE it under pipefail
        [[ $banner == *"inline 8-bit counters"* ]] || return 1
    done
}
build
BIN=$(swift build -c "$CONFIG" --build-path "$HERE/.build" --show-bin-path)
for attempt in 1 2 3; do
    instrumented && break
    echo "run.sh: the build has no coverage instrumentation; rebuilding clean (attempt $attempt)" >&2
    rm -rf "$HERE/.build"
    build
done
instrumented || echo "run.sh: WARNING: still no coverage instrumentation after 3 clean rebuilds" >&2

python3 make-corpus.py --wait "${VECTOR_WAIT:-0}" || exit 2
SEED=corpus-work/seed
mkdir -p corpus-work/logs FailCases
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:symbolize=1}
# Swift's own backtracer fights ASan's signal handling (it reports a bogus stack-buffer-underflow): leave it to ASan.
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no}

# Regression inputs: every file in FailCases/ (all targets' findings are good inputs for each target) and the seeds.
regression_files() {
    find FailCases "$SEED" -type f ! -name 'README*' ! -name '.*' -print | sort
}

if [[ $MODE == regress ]]; then
    mapfile -t FILES < <(regression_files)
    status=0
    for target in "${TARGETS[@]}"; do
        log=corpus-work/logs/$target-regress.log
        if "$BIN/$target" -runs=1 "${FILES[@]}" >"$log" 2>&1; then
            echo "== $target: ${#FILES[@]} inputs, no trap"
        else
            echo "== $target: FAILED (log: $log)"; grep -E "FUZZ FINDING|Fatal error|ERROR: AddressSanitizer|Running:" "$log" | tail -5
            status=1
        fi
    done
    exit $status
fi

fuzz_one() {
    local target=$1 work=corpus-work/$1 artifacts=corpus-work/artifacts/$1/ log=corpus-work/logs/$1.log
    mkdir -p "$work" "$artifacts" "FailCases/$target"
    local before; before=$(ls "$artifacts" | wc -l)
    # First corpus folder is written to (new coverage); the others are read only.
    "$BIN/$target" "$work" "$SEED" FailCases \
        -dict=wire.dict -max_len=70000 -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
    local rc=$?
    local found=0
    for file in "$artifacts"*; do
        [[ -f $file ]] || continue
        cp -n "$file" "FailCases/$target/$(basename "$file")" && found=$((found + 1))
    done
    grep -q "no interesting inputs" "$log" && echo "run.sh: WARNING: $target ran without coverage feedback" >&2
    local last; last=$(grep -E "^#[0-9]+" "$log" | tail -1)
    local eps; eps=$(grep -E "stat::average_exec_per_sec" "$log" | awk '{print $2}')
    local runs; runs=$(grep -E "stat::number_of_executed_units" "$log" | awk '{print $2}')
    echo "== $target: exit $rc, ${runs:-?} runs, ${eps:-?} exec/s; last: ${last:-none}"
    if [[ $rc -ne 0 ]]; then
        grep -E "FUZZ FINDING|Fatal error|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY|Test unit written" "$log" | head -8
        echo "   crash inputs copied to FailCases/$target/ ($found file(s)); log: $log"
        return 1
    fi
    rm -rf "$artifacts"
    return 0
}

echo "== fuzzing ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each (jobs: ${FUZZ_JOBS:-1})"
status=0
pids=()
for target in "${TARGETS[@]}"; do
    if [[ ${FUZZ_JOBS:-1} -gt 1 ]]; then
        fuzz_one "$target" & pids+=($!)
        while [[ $(jobs -rp | wc -l) -ge ${FUZZ_JOBS} ]]; do wait -n || status=1; done
    else
        fuzz_one "$target" || status=1
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
