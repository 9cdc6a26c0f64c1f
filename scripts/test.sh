#!/usr/bin/env bash
# The project's one test command: unit and integration tests, the two-hosts check and its three-hosts cluster variant
# (scripts/two-hosts.sh, scripts/two-hosts.sh --cluster), then fuzz regression inputs and a short bounded fuzz.
# FUZZ_SECONDS=0 skips the timed fuzz (regression inputs still run).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build

echo "== swift test"
# The whole run takes a few minutes once built; the first run builds too (about 10 minutes here). It runs once: the
# tests wait on events, not on the wall clock, so a loaded machine makes them slower, not red. A run that has not
# finished in time is stuck: it is stopped, fails, and its last lines show the test it was in. Warnings are errors, and
# a target that imports a module it does not declare as a dependency fails to build.
set +e
# Line-buffered, so that a stuck run still shows the test it was in.
timeout --signal=KILL 1800 stdbuf -oL -eL swift test --disable-xctest -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error > .build/test-output.txt 2>&1
status=$?
set -e
if [ "$status" -eq 137 ] || [ "$status" -eq 124 ]; then
  echo "swift test did not finish in time: a hang. Its last lines:"
  tail -c 600 .build/test-output.txt | tail -n 4
  echo
fi
# Show failures and the summary, not one line per passing test.
grep -vE 'passed after|started\.?$|^Test Case .* (started|passed)|^\[[0-9]+/[0-9]+\] (Compiling|Emitting)' \
  .build/test-output.txt | tail -n 150
summary=$(grep -E 'Test run with [0-9]+ tests' .build/test-output.txt | tail -1 || true)
if [ "$status" -ne 0 ] || [ -z "$summary" ]; then
  echo "swift test failed (exit $status)" >&2
  exit 1
fi

echo "== two hosts (network namespaces)"
# Builds the two CLI products itself, then runs them in two network namespaces (root; RSUP_ALLOW_SKIP=1 skips elsewhere).
bash scripts/two-hosts.sh

echo "== three hosts: two nodes on one PostgreSQL, the device in a third namespace"
# The binaries the two-hosts check just built; PostgreSQL runs in the first node's namespace (scripts/two-hosts.sh).
bash scripts/two-hosts.sh --cluster "$(swift build --show-bin-path)"

echo "== fuzz: regression inputs"
bash FuzzTesting/run.sh --regress

fuzz_seconds=${FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzz: ${fuzz_seconds}s per target"
  bash FuzzTesting/run.sh "$fuzz_seconds"
fi
# The test runner's own closing summary line, last, so a reader sees how many tests ran.
echo "== summary"
echo "$summary"
