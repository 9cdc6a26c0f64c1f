#!/usr/bin/env bash
# Two hosts on one machine: the supporter node and the device node each run in their own network namespace, joined
# by a veth pair with private addresses that exist only inside those namespaces (the host's interfaces and routes
# are never touched). Checks that a whole session crosses between them, then that cutting the link mid-session is
# reported by both sides within the keepalive bound (scripts/two_hosts.py drives the nodes; it reuses demo.py).
#
# Usage: scripts/two-hosts.sh [BIN_DIR]   (default: builds rsup-supporter and rsup-device, uses swift's bin path)
# Needs root (CAP_SYS_ADMIN) for 'ip netns'. Without it: fails, or prints "skipped: …" and exits 0 if RSUP_ALLOW_SKIP=1.
# RSUP_LOSS_BOUND=SECONDS overrides the loss-detection bound (see two_hosts.py). Exit status: 0 pass, 1 fail.
set -euo pipefail
cd "$(dirname "$0")/.."

suffix=$$
sup_ns=rsup-sup-$suffix
dev_ns=rsup-dev-$suffix
sup_if=veth-sup          # names inside the namespaces only: the pair is created in them, never in the host's
dev_if=veth-dev
sup_addr=10.231.77.1
dev_addr=10.231.77.2
made_ns=()
work=
helper=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    set +e
    if [ -n "$helper" ] && kill -0 "$helper" 2>/dev/null; then
        kill -TERM "$helper" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$helper" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$helper" 2>/dev/null
        wait "$helper" 2>/dev/null
    fi
    local ns pids
    for ns in "${made_ns[@]+"${made_ns[@]}"}"; do
        # Whatever still runs in the namespace (nodes, control commands): by process id, TERM then KILL.
        pids=$(ip netns pids "$ns" 2>/dev/null)
        if [ -n "$pids" ]; then
            kill -TERM $pids 2>/dev/null
            for _ in $(seq 25); do pids=$(ip netns pids "$ns" 2>/dev/null); [ -z "$pids" ] && break; sleep 0.2; done
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        fi
        ip netns del "$ns" 2>/dev/null || echo "two-hosts: could not delete namespace $ns" >&2
    done
    [ -n "$work" ] && rm -rf -- "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'echo "two-hosts: interrupted" >&2; exit 130' INT
trap 'echo "two-hosts: terminated" >&2; exit 143' TERM

skip_or_fail() {
    if [ "${RSUP_ALLOW_SKIP:-}" = 1 ]; then
        echo "skipped: two hosts (network namespaces): $*"
        exit 0
    fi
    echo "two hosts: FAIL: $* (set RSUP_ALLOW_SKIP=1 to skip where namespaces are not allowed)" >&2
    exit 1
}

command -v ip >/dev/null 2>&1 || skip_or_fail "the 'ip' command (iproute2) is not installed"
if ! err=$(ip netns add "$sup_ns" 2>&1); then
    skip_or_fail "cannot create network namespaces ('ip netns add' said: ${err:-nothing}; needs root / CAP_SYS_ADMIN)"
fi
made_ns+=("$sup_ns")
ip netns add "$dev_ns"
made_ns+=("$dev_ns")

# The veth pair is created directly inside the two namespaces.
ip link add "$sup_if" netns "$sup_ns" type veth peer name "$dev_if" netns "$dev_ns"
ip -n "$sup_ns" addr add "$sup_addr/30" dev "$sup_if"
ip -n "$dev_ns" addr add "$dev_addr/30" dev "$dev_if"
for ns in "$sup_ns" "$dev_ns"; do ip -n "$ns" link set lo up; done
ip -n "$sup_ns" link set "$sup_if" up
ip -n "$dev_ns" link set "$dev_if" up
# Both ends must have carrier (LOWER_UP) before the nodes use the link.
for _ in $(seq 50); do
    ip -n "$sup_ns" link show "$sup_if" | grep -q LOWER_UP && ip -n "$dev_ns" link show "$dev_if" | grep -q LOWER_UP && break
    sleep 0.1
done
ip -n "$dev_ns" link show "$dev_if" | grep -q LOWER_UP \
    || { echo "two hosts: FAIL: the veth pair between $sup_ns and $dev_ns never came up" >&2; exit 1; }
echo "namespaces: $sup_ns ($sup_if $sup_addr/30) <-> $dev_ns ($dev_if $dev_addr/30)"

work=$(mktemp -d "${TMPDIR:-/tmp}/rsup-two-hosts.XXXXXX")
if [ $# -ge 1 ]; then
    bin=$1
else
    # Relink the two products: other builds (swift test) can leave these binaries out of date.
    for product in rsup-supporter rsup-device; do
        swift build --product "$product" >"$work/build.log" 2>&1 \
            || { tail -n 30 "$work/build.log" >&2; echo "two hosts: FAIL: swift build --product $product" >&2; exit 1; }
    done
    bin=$(swift build --show-bin-path)
fi

# In the background so this shell's traps run at once on INT/TERM (and clean up even if the helper is stuck).
python3 scripts/two_hosts.py "$bin" "$work" "$sup_ns" "$sup_if" "$sup_addr" "$dev_ns" "$dev_if" &
helper=$!
status=0
wait "$helper" || status=$?
helper=
[ "$status" -le 1 ] || echo "two hosts: FAIL (scripts/two_hosts.py exited with status $status)" >&2
exit "$status"
