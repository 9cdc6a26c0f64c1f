#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests: initdb in a folder of our own, started on a Unix socket in that folder and
# on a free loopback port, trust authentication for the role `rsup` (loopback and socket only), torn down with `stop`.
#
#   scripts/pg-cluster.sh start DIR    → prints one line: host=DIR/socket port=PORT user=rsup dbname=rsup
#   scripts/pg-cluster.sh start DIR --tls CERT KEY
#                                      → the same, with ssl=on: the server presents CERT (PEM, with KEY) on its
#                                        loopback port; clients choose TLS (sslmode=verify-full sslrootcert=CA)
#   scripts/pg-cluster.sh start DIR --listen ADDR/PREFIX
#                                      → also listens on ADDR (an address of this network namespace, e.g. a private
#                                        one inside `ip netns exec`) and trusts `rsup` from ADDR/PREFIX; the line
#                                        printed then names host=ADDR (scripts/two-hosts.sh --cluster). Combines
#                                        with --tls.
#   scripts/pg-cluster.sh stop DIR     → stops the server and removes DIR
#
# As root, the server runs as the unprivileged `postgres` user (PostgreSQL refuses to run as root). Debian's binaries
# are used (postgresql, from scripts/install-deps.sh). Exit 1 with a message when PostgreSQL cannot be started.
set -euo pipefail
command=${1:-}
dir=${2:-}
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: $0 start DIR [--tls CERT KEY] [--listen ADDR/PREFIX] | stop DIR" >&2
  exit 2
fi
tls_cert=
tls_key=
listen=
shift 2
while [ $# -gt 0 ]; do
  case "$1" in
    --tls)
      tls_cert=${2:-}
      tls_key=${3:-}
      if [ ! -f "$tls_cert" ] || [ ! -f "$tls_key" ]; then
        echo "error: --tls needs a certificate file and its key file" >&2
        exit 2
      fi
      shift 3
      ;;
    --listen)
      listen=${2:-}
      if ! [[ "$listen" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]]; then
        echo "error: --listen needs an IPv4 address with its prefix length, e.g. 10.0.0.1/24" >&2
        exit 2
      fi
      shift 2
      ;;
    *)
      echo "error: unknown option '$1'; usage: $0 start DIR [--tls CERT KEY] [--listen ADDR/PREFIX] | stop DIR" >&2
      exit 2
      ;;
  esac
done
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "error: PostgreSQL server binaries not found under /usr/lib/postgresql (install the postgresql package)" >&2
  exit 1
fi
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$command" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    mkdir -p "$dir/data" "$dir/socket"
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$dir"; chmod 755 "$dir"; fi
    chmod 700 "$dir/data"
    chmod 777 "$dir/socket"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" --username=rsup --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
      --no-sync >"$dir/initdb.log" 2>&1 || { echo "error: initdb failed: $(tail -3 "$dir/initdb.log")" >&2; exit 1; }
    if [ -n "$tls_cert" ]; then
      # In the configuration file, not on the command line, so that a restart keeps TLS on. The server wants its key
      # owned by itself and readable by nobody else.
      mkdir -p "$dir/tls"
      cp "$tls_cert" "$dir/tls/server.crt"
      cp "$tls_key" "$dir/tls/server.key"
      if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$dir/tls"; fi
      chmod 600 "$dir/tls/server.key"
      printf "ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n" "$dir/tls/server.crt" "$dir/tls/server.key" \
        >>"$dir/data/postgresql.conf"
    fi
    addresses=127.0.0.1
    host=$dir/socket
    if [ -n "$listen" ]; then
      addresses="127.0.0.1,${listen%/*}"
      host=${listen%/*}
      # The network's hosts may connect as rsup without a password: a throwaway cluster on a private network only.
      printf "host all rsup %s trust\n" "$listen" >>"$dir/data/pg_hba.conf"
    fi
    # The port was free when picked, but initdb takes seconds and anything (another test's server, an outgoing
    # connection's ephemeral port) may take it meanwhile: a start that cannot bind tries another port, up to 5 times.
    for attempt in 1 2 3 4 5; do
      if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
        -o "-k $dir/socket -p $port -c listen_addresses=$addresses -c fsync=off -c max_connections=200" \
        >/dev/null 2>&1; then
        break
      fi
      if [ "$attempt" -eq 5 ] || ! grep -q "could not create listen socket\|could not bind" "$dir/server.log"; then
        echo "error: the server did not start: $(tail -3 "$dir/server.log")" >&2
        exit 1
      fi
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    done
    as_owner "$bin/createdb" -h "$dir/socket" -p "$port" -U rsup rsup
    echo "host=$host port=$port user=rsup dbname=rsup"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start DIR [--tls CERT KEY] [--listen ADDR/PREFIX] | stop DIR" >&2
    exit 2
    ;;
esac
