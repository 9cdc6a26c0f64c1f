#!/usr/bin/env bash
# Two hosts on one machine: the supporter node and the device node each run in their own network namespace, joined
# by a veth pair with private addresses that exist only inside those namespaces (the host's interfaces and routes
# are never touched). Checks that a whole session crosses between them, then that cutting the link mid-session is
# reported by both sides within the keepalive bound (scripts/two_hosts.py drives the nodes; it reuses demo.py).
#
# Usage: scripts/two-hosts.sh [--cluster] [BIN_DIR]
#   (default: builds rsup-supporter and rsup-device, uses swift's bin path)
# Needs root (CAP_SYS_ADMIN) for 'ip netns'. Without it: fails, or prints "skipped: …" and exits 0 if RSUP_ALLOW_SKIP=1.
# RSUP_LOSS_BOUND=SECONDS overrides the loss-detection bound (see two_hosts.py). Exit status: 0 pass, 1 fail.
#
# --cluster: three hosts instead. Two supporter nodes (A and B) share one PostgreSQL database and the device runs in a
# third namespace. Each pair of namespaces is joined by its own veth pair (a triangle: A–B, A–device, B–device, each
# a /30, no forwarding). PostgreSQL (scripts/pg-cluster.sh, as the `postgres` user) runs inside A's namespace and
# listens on A's address on the A–B link, so node B reaches it over that link and node A over its own address.
# The device joins node A (the B–device link is there for a device that lists both nodes; this check dials A only);
# the supporter's commands (connect, end) go to node B's control socket, which routes them
# through the database to node A (scripts/two_hosts.py --cluster). Needs the Debian postgresql package as well.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=two
if [ "${1:-}" = "--cluster" ]; then
    mode=cluster
    shift
fi
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
pg_dir=

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
    # The database before the namespaces: a clean stop through its pid file (the nodes are gone by now).
    [ -n "$pg_dir" ] && bash scripts/pg-cluster.sh stop "$pg_dir" >/dev/null 2>&1
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

check_name="two hosts"
[ "$mode" = cluster ] && check_name="three hosts (cluster)"

skip_or_fail() {
    if [ "${RSUP_ALLOW_SKIP:-}" = 1 ]; then
        echo "skipped: $check_name (network namespaces): $*"
        exit 0
    fi
    echo "$check_name: FAIL: $* (set RSUP_ALLOW_SKIP=1 to skip where namespaces are not allowed)" >&2
    exit 1
}

# Builds the two CLI products unless a BIN_DIR was given; sets `bin`.
binaries() {
    if [ $# -ge 1 ]; then
        bin=$1
        return
    fi
    # Relink the two products: other builds (swift test) can leave these binaries out of date.
    for product in rsup-supporter rsup-device; do
        swift build --product "$product" >"$work/build.log" 2>&1 \
            || { tail -n 30 "$work/build.log" >&2; echo "$check_name: FAIL: swift build --product $product" >&2; exit 1; }
    done
    bin=$(swift build --show-bin-path)
}

# Runs the Python driver in the background so this shell's traps run at once on INT/TERM (and clean up even if the
# helper is stuck); exits with its status.
drive() {
    python3 scripts/two_hosts.py "$@" &
    helper=$!
    local status=0
    wait "$helper" || status=$?
    helper=
    [ "$status" -le 1 ] || echo "$check_name: FAIL (scripts/two_hosts.py exited with status $status)" >&2
    exit "$status"
}

# A veth pair created directly inside two namespaces, each end with its address, both up with carrier.
veth_link() {
    local ns1=$1 if1=$2 addr1=$3 ns2=$4 if2=$5 addr2=$6
    ip link add "$if1" netns "$ns1" type veth peer name "$if2" netns "$ns2"
    ip -n "$ns1" addr add "$addr1" dev "$if1"
    ip -n "$ns2" addr add "$addr2" dev "$if2"
    ip -n "$ns1" link set "$if1" up
    ip -n "$ns2" link set "$if2" up
    for _ in $(seq 50); do
        ip -n "$ns1" link show "$if1" | grep -q LOWER_UP && ip -n "$ns2" link show "$if2" | grep -q LOWER_UP && return 0
        sleep 0.1
    done
    echo "$check_name: FAIL: the veth pair between $ns1 and $ns2 never came up" >&2
    exit 1
}

command -v ip >/dev/null 2>&1 || skip_or_fail "the 'ip' command (iproute2) is not installed"

if [ "$mode" = cluster ]; then
    a_ns=rsup-na-$suffix
    b_ns=rsup-nb-$suffix
    d_ns=rsup-dv-$suffix
    if ! err=$(ip netns add "$a_ns" 2>&1); then
        skip_or_fail "cannot create network namespaces ('ip netns add' said: ${err:-nothing}; needs root / CAP_SYS_ADMIN)"
    fi
    made_ns+=("$a_ns")
    ip netns add "$b_ns"
    made_ns+=("$b_ns")
    ip netns add "$d_ns"
    made_ns+=("$d_ns")
    for ns in "$a_ns" "$b_ns" "$d_ns"; do ip -n "$ns" link set lo up; done
    # The triangle: A–B carries the database, A–device and B–device the device links.
    veth_link "$a_ns" veth-ab 10.231.78.1/30 "$b_ns" veth-ba 10.231.78.2/30
    veth_link "$a_ns" veth-ad 10.231.78.5/30 "$d_ns" veth-da 10.231.78.6/30
    veth_link "$b_ns" veth-bd 10.231.78.9/30 "$d_ns" veth-db 10.231.78.10/30
    echo "namespaces: $a_ns (node A; veth-ab 10.231.78.1/30 to B, veth-ad 10.231.78.5/30 to the device)"
    echo "            $b_ns (node B; veth-ba 10.231.78.2/30 to A, veth-bd 10.231.78.9/30 to the device)"
    echo "            $d_ns (device; veth-da 10.231.78.6/30 to A, veth-db 10.231.78.10/30 to B)"

    work=$(mktemp -d "${TMPDIR:-/tmp}/rsup-three-hosts.XXXXXX")
    binaries "$@"
    # PostgreSQL's folder outside `work` (root's alone): the server runs as the `postgres` user.
    pg_dir=${TMPDIR:-/tmp}/rsup-three-hosts-pg-$suffix
    if ! store=$(ip netns exec "$a_ns" bash scripts/pg-cluster.sh start "$pg_dir" --listen 10.231.78.1/30 2>"$work/pg.err")
    then
        pg_error=$(cat "$work/pg.err")
        bash scripts/pg-cluster.sh stop "$pg_dir" >/dev/null 2>&1 || true
        pg_dir=
        skip_or_fail "cannot start PostgreSQL in $a_ns: ${pg_error:-no message} (scripts/install-deps.sh installs it)"
    fi
    echo "PostgreSQL: in $a_ns on 10.231.78.1 ($store)"
    drive --cluster "$bin" "$work" "$store" "$a_ns" 10.231.78.5 "$b_ns" 10.231.78.9 "$d_ns"
fi

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
binaries "$@"
drive "$bin" "$work" "$sup_ns" "$sup_if" "$sup_addr" "$dev_ns" "$dev_if"
