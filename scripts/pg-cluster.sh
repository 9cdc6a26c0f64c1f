#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests: initdb in a folder of our own, started on a Unix socket in that folder and
# on a free loopback port, trust authentication for the role `rsup` (loopback and socket only), torn down with `stop`.
#
#   scripts/pg-cluster.sh start DIR    → prints one line: host=DIR/socket port=PORT user=rsup dbname=rsup
#   scripts/pg-cluster.sh start DIR --tls CERT KEY
#                                      → the same, with ssl=on: the server presents CERT (PEM, with KEY) on its
#                                        loopback port; clients choose TLS (sslmode=verify-full sslrootcert=CA)
#   scripts/pg-cluster.sh stop DIR     → stops the server and removes DIR
#
# As root, the server runs as the unprivileged `postgres` user (PostgreSQL refuses to run as root). Debian's binaries
# are used (postgresql, from scripts/install-deps.sh). Exit 1 with a message when PostgreSQL cannot be started.
set -euo pipefail
command=${1:-}
dir=${2:-}
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: $0 start DIR [--tls CERT KEY] | stop DIR" >&2
  exit 2
fi
tls_cert=
tls_key=
if [ "${3:-}" = "--tls" ]; then
  tls_cert=${4:-}
  tls_key=${5:-}
  if [ ! -f "$tls_cert" ] || [ ! -f "$tls_key" ]; then
    echo "error: --tls needs a certificate file and its key file" >&2
    exit 2
  fi
fi
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
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
      -o "-k $dir/socket -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
      >/dev/null 2>&1 || { echo "error: the server did not start: $(tail -3 "$dir/server.log")" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir/socket" -p "$port" -U rsup rsup
    echo "host=$dir/socket port=$port user=rsup dbname=rsup"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start DIR [--tls CERT KEY] | stop DIR" >&2
    exit 2
    ;;
esac
