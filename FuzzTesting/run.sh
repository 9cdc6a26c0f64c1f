#!/usr/bin/env bash
# Builds the SupportWire, SupportSession and SupporterCore fuzz targets with libFuzzer + AddressSanitizer and runs them.
#
#   ./run.sh [seconds] [target...]   fuzz each target for `seconds` (default 60); all targets if none named
#   ./run.sh --regress [target...]   run each target once over every file in FailCases/ and the seed corpus; no
#                                    fuzzing (for CI). Exit status 1 if any input traps.
#   ./run.sh --long HOURS [target...]
#                                    a campaign: fuzz each target for HOURS (decimals allowed) in rounds of at most
#                                    FUZZ_ROUND_SECONDS (default 1800), keeping the corpus in corpus-long/<target>/
#                                    between runs (new coverage merged in after every round) and the cumulative
#                                    executions in corpus-long/<target>.stats. Ctrl-C (or SIGTERM) ends the current
#                                    round cleanly: its count is kept and its new inputs merged.
#
# Environment: FUZZ_JOBS=N run up to N targets at once (default 1), FUZZ_ARGS="..." extra libFuzzer flags,
#              VECTOR_WAIT=seconds to wait for protocol/vectors/*.jsonl, FUZZ_MAIN_PACKAGE=path of the
#              RemoteSupport package to fuzz (default: the parent folder; see Package.swift).
# Each target has its own -max_len and dictionary (see max_len_of and dict_parts_of below).
# Always a release (-O) build: at -Onone this Swift does not insert the SanitizerCoverage instrumentation, so
# libFuzzer would run blind ("no interesting inputs"). Overflow and bounds checks stay on at -O.
# A crash, leak, timeout or OOM file found while fuzzing is copied to FailCases/<target>/ and the script exits 1.
# Scratch (gitignored): .build/ and corpus-work/{seed,dict,<target>,long-new,artifacts,logs}/; kept: corpus-long/.
set -uo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)

ALL_TARGETS=(FuzzWireDecode FuzzWireRoundTrip FuzzSessionMachines FuzzCodeRegistry)
MODE=fuzz
SECONDS_PER_TARGET=60
if [[ ${1:-} == --regress ]]; then MODE=regress; shift
elif [[ ${1:-} == --long ]]; then
    MODE=long; shift
    [[ ${1:-} =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "run.sh: --long needs HOURS (e.g. 8 or 0.5)" >&2; exit 2; }
    SECONDS_PER_TARGET=$(awk -v h="$1" 'BEGIN { printf "%d", h * 3600 }'); shift
    [[ $SECONDS_PER_TARGET -gt 0 ]] || { echo "run.sh: --long $SECONDS_PER_TARGET s is no campaign" >&2; exit 2; }
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then SECONDS_PER_TARGET=$1; shift
elif [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,21p' "$0"; exit 0
fi
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL_TARGETS[@]}")
for target in "${TARGETS[@]}"; do
    [[ -d Sources/$target ]] || { echo "run.sh: unknown target $target (have: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

# The longest input libFuzzer makes for each target: every check runs over the whole input, so time per input grows
# with its length, and longer inputs reached nothing new (measured: 5-minute runs from the same seeds reached the
# same product edges at 512 as at 1024 and 4096 bytes for the wire targets, at 1024 as at 4096 for the session
# target, at 512 as at 2048 for the registry, at 1.5-4x the executions). Wire frames are small (the largest that is
# not padding, a REGISTER with a 257-byte token, is about 300 bytes); the decode target reaches the large-frame paths
# with a smaller decoder maximum taken from the input's own lengths (FuzzCommon.checkFrameEdges), and frames over the
# limit are in the hand-made FailCases that --regress runs. Session inputs are events of 1-3 bytes and frames;
# registry inputs are 2-byte operations, and its limits are reached within a few dozen.
max_len_of() {
    case $1 in
        FuzzWireDecode | FuzzWireRoundTrip) echo 512 ;;
        FuzzSessionMachines) echo 1024 ;;
        FuzzCodeRegistry) echo 512 ;;
    esac
}
# Each target's dictionary, joined from these files into corpus-work/dict/<target>.dict.
dict_parts_of() {
    case $1 in
        FuzzWireDecode | FuzzWireRoundTrip) echo wire.dict ;;
        FuzzSessionMachines) echo wire.dict session.dict ;;
        FuzzCodeRegistry) echo registry.dict ;;
    esac
}

CONFIG=release
echo "== building (${CONFIG}, -sanitize=fuzzer,address)"
# ld.gold prints hundreds of harmless "Cannot export local symbol '__asan_…'" warnings: filtered out.
build() {
    # The sanitizers are named again in one -Xswiftc argument, after SwiftPM's own flags. SwiftPM emits
    # --sanitize=fuzzer --sanitize=address as two -sanitize= arguments in a random order (a Set), and swift-frontend
    # honours only the last: about half the builds came out with libFuzzer's coverage but no AddressSanitizer checks
    # in the Swift code (last "fuzzer"), the other half with ASan and no coverage (last "address": the "no inline
    # 8-bit counters" builds), which the explicit coverage kinds below then papered over. SwiftPM's flags still link.
    swift build -c "$CONFIG" --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address \
        -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp --build-path "$HERE/.build" 2>&1 \
        | grep -v "ld.gold: warning: Cannot export local symbol"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "run.sh: build failed" >&2; exit 2; }
}
# Whether every target has libFuzzer's coverage counters ("inline 8-bit counters" in its banner) and AddressSanitizer
# checks in its code (calls to __asan_report_*), in case a toolchain drops either again.
instrumented() {
    local target
    for target in "${ALL_TARGETS[@]}"; do
        local banner
        banner=$("$BIN/$target" -runs=0 2>&1 || true)  # captured, not piped: grep -q would SIGPIPE it under pipefail
        [[ $banner == *"inline 8-bit counters"* ]] || return 1
        local asan
        asan=$(objdump -d "$BIN/$target" 2>/dev/null | grep -c "call.*__asan_report_load")
        [[ ${asan:-0} -gt 0 ]] || return 1
    done
}
build
BIN=$(swift build -c "$CONFIG" --build-path "$HERE/.build" --show-bin-path)
for attempt in 1 2 3; do
    instrumented && break
    echo "run.sh: the build lacks coverage or ASan instrumentation; rebuilding clean (attempt $attempt)" >&2
    rm -rf "$HERE/.build"
    build
done
instrumented || echo "run.sh: WARNING: still no coverage or ASan instrumentation after 3 clean rebuilds" >&2

python3 make-corpus.py --wait "${VECTOR_WAIT:-0}" || exit 2
SEED=corpus-work/seed
mkdir -p corpus-work/logs corpus-work/dict FailCases
for target in "${ALL_TARGETS[@]}"; do
    # shellcheck disable=SC2046  # the parts are plain file names
    cat $(dict_parts_of "$target") >"corpus-work/dict/$target.dict" || exit 2
done
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

# Fuzzes `target` for `seconds`, new inputs into `outdir` (the first corpus folder is the one written to), then the
# read-only folders given after it. Sets RUNS, EPS and RC; copies crash files to FailCases/<target>/ (sets FOUND).
fuzz_round() {
    local target=$1 seconds=$2 outdir=$3 log=$4; shift 4
    local artifacts=corpus-work/artifacts/$target/
    mkdir -p "$outdir" "$artifacts" "FailCases/$target"
    "$BIN/$target" "$outdir" "$@" "$SEED" FailCases \
        -dict="corpus-work/dict/$target.dict" -max_len="$(max_len_of "$target")" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
    RC=$?
    # Ctrl-C (--long): libFuzzer prints its counts and exits 72; an interrupted round is not a finding.
    [[ $RC -eq 72 ]] && grep -q "libFuzzer: run interrupted" "$log" && RC=0
    FOUND=0
    local file
    for file in "$artifacts"*; do
        [[ -f $file ]] || continue
        cp -n "$file" "FailCases/$target/$(basename "$file")" && FOUND=$((FOUND + 1))
    done
    [[ $RC -eq 0 ]] && rm -rf "$artifacts"
    grep -q "no interesting inputs" "$log" && echo "run.sh: WARNING: $target ran without coverage feedback" >&2
    RUNS=$(grep -E "stat::number_of_executed_units" "$log" | awk '{print $2}')
    EPS=$(grep -E "stat::average_exec_per_sec" "$log" | awk '{print $2}')
    if [[ -z $RUNS ]]; then  # no final stats (killed): the last status line's count
        RUNS=$(grep -oE "^#[0-9]+" "$log" | tail -1 | tr -d '#')
    fi
    RUNS=${RUNS:-0}
}

report_failure() {
    local target=$1 log=$2
    grep -E "FUZZ FINDING|Fatal error|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY|Test unit written" "$log" | head -8
    echo "   crash inputs copied to FailCases/$target/ ($FOUND file(s)); log: $log"
}

fuzz_one() {
    local target=$1 log=corpus-work/logs/$1.log
    fuzz_round "$target" "$SECONDS_PER_TARGET" "corpus-work/$target" "$log"
    local last; last=$(grep -E "^#[0-9]+" "$log" | tail -1)
    echo "== $target: exit $RC, $RUNS runs, ${EPS:-?} exec/s; last: ${last:-none}"
    if [[ $RC -ne 0 ]]; then
        report_failure "$target" "$log"
        return 1
    fi
    return 0
}

# --- campaign mode

LONG=corpus-long
STOP=corpus-work/long-stop
stat_of() { # stat_of FILE KEY: a number from a stats file (0 when absent)
    local value
    value=$(grep -E "^$2=" "$1" 2>/dev/null | tail -1 | cut -d= -f2)
    echo "${value:-0}"
}
files_in() { find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l; }

# New inputs of a round (or of an interrupted earlier run) that add coverage go into the kept corpus.
merge_new() {
    local target=$1 new=corpus-work/long-new/$1
    [[ -n $(ls -A "$new" 2>/dev/null) ]] || return 0
    local before; before=$(files_in "$LONG/$target")
    "$BIN/$target" -merge=1 -max_len="$(max_len_of "$target")" "$LONG/$target" "$new" \
        >"corpus-work/logs/$target-merge.log" 2>&1 \
        || echo "run.sh: $target: merge failed (log: corpus-work/logs/$target-merge.log); new inputs kept in $new" >&2
    [[ -f corpus-work/logs/$target-merge.log ]] && grep -q "MERGE-OUTER: .* new files" "corpus-work/logs/$target-merge.log" \
        && rm -rf "$new"
    MERGED=$(($(files_in "$LONG/$target") - before))
}

long_one() {
    local target=$1 stats=$LONG/$1.stats log=corpus-work/logs/$1-long.log
    mkdir -p "$LONG/$target"
    MERGED=0
    merge_new "$target"  # left over from an interrupted run
    local left=$SECONDS_PER_TARGET round=0 runs_here=0 seconds_here=0 status=0
    while [[ $left -ge 10 && ! -e $STOP ]]; do  # a last round under 10 s would be mostly start-up
        local seconds=$((left < ${FUZZ_ROUND_SECONDS:-1800} ? left : ${FUZZ_ROUND_SECONDS:-1800}))
        round=$((round + 1))
        local started=$SECONDS
        rm -rf "corpus-work/long-new/$target"
        fuzz_round "$target" "$seconds" "corpus-work/long-new/$target" "$log" "$LONG/$target"
        local took=$((SECONDS - started))
        left=$((left - took))
        MERGED=0
        merge_new "$target"
        runs_here=$((runs_here + RUNS)); seconds_here=$((seconds_here + took))
        local crashes=$(($(stat_of "$stats" crashes) + (RC != 0 ? 1 : 0)))
        {
            echo "# run.sh --long: cumulative over every campaign of $target (this file is kept; delete it to restart)"
            echo "executions=$(($(stat_of "$stats" executions) + RUNS))"
            echo "seconds=$(($(stat_of "$stats" seconds) + took))"
            echo "rounds=$(($(stat_of "$stats" rounds) + 1))"
            echo "crashes=$crashes"
            echo "last_round=$(date -u +%Y-%m-%dT%H:%M:%SZ) $RUNS executions in $took s, ${EPS:-?} exec/s, exit $RC"
        } >"$stats.tmp" && mv "$stats.tmp" "$stats"
        printf "== %s round %d: %'d executions in %d s (%s exec/s), corpus %d (+%d); cumulative %'d\n" \
            "$target" "$round" "$RUNS" "$took" "${EPS:-?}" "$(files_in "$LONG/$target")" "$MERGED" \
            "$(stat_of "$stats" executions)"
        if [[ $RC -ne 0 ]]; then
            report_failure "$target" "$log"
            echo "   $target: campaign stopped at its first finding; fix it, and the next --long run goes on from the kept corpus"
            status=1
            break
        fi
    done
    printf "== %s: this run %'d executions in %d s; cumulative %'d executions in %.1f h, %d crash(es)\n" \
        "$target" "$runs_here" "$seconds_here" "$(stat_of "$stats" executions)" \
        "$(awk -v s="$(stat_of "$stats" seconds)" 'BEGIN { print s / 3600 }')" "$(stat_of "$stats" crashes)"
    return $status
}

status=0
pids=()
if [[ $MODE == long ]]; then
    rm -f "$STOP"
    # Ctrl-C or SIGTERM: libFuzzer ends its round and prints its counts; the rounds stop; the corpus is merged.
    trap 'touch "$STOP"' INT TERM
    echo "== campaign: ${TARGETS[*]} for $SECONDS_PER_TARGET s each (jobs: ${FUZZ_JOBS:-1}); corpus in $LONG/"
    runner=long_one
else
    echo "== fuzzing ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each (jobs: ${FUZZ_JOBS:-1})"
    runner=fuzz_one
fi
for target in "${TARGETS[@]}"; do
    [[ -e $STOP ]] && break
    if [[ ${FUZZ_JOBS:-1} -gt 1 ]]; then
        $runner "$target" & pids+=($!)
        while [[ $(jobs -rp | wc -l) -ge ${FUZZ_JOBS} ]]; do
            wait -n; rc=$?
            [[ $rc -ne 0 && $rc -le 128 ]] && status=1  # above 128: a trapped signal interrupted the wait
        done
    else
        $runner "$target" || status=1
    fi
done
for pid in "${pids[@]}"; do
    until wait "$pid"; rc=$?; [[ $rc -le 128 ]]; do :; done  # a trapped signal interrupts wait: wait again
    [[ $rc -eq 0 ]] || status=1
done
if [[ $MODE == long ]]; then
    echo "== cumulative executions (all --long runs):"
    for target in "${ALL_TARGETS[@]}"; do
        [[ -f $LONG/$target.stats ]] || continue
        printf "   %-20s %'15d executions  %7.1f h  %d crash(es)  corpus %d\n" "$target" \
            "$(stat_of "$LONG/$target.stats" executions)" \
            "$(awk -v s="$(stat_of "$LONG/$target.stats" seconds)" 'BEGIN { print s / 3600 }')" \
            "$(stat_of "$LONG/$target.stats" crashes)" "$(files_in "$LONG/$target")"
    done
    rm -f "$STOP"
fi
exit $status
