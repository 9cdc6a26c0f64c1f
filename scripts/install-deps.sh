#!/usr/bin/env bash
# Installs the Debian packages RemoteSupport needs, if any is missing. Used by the demo and by CI.
set -euo pipefail
need=()
for package in libssl-dev libsqlite3-dev openssl iproute2 python3 curl; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: need root to install ${need[*]} (run as root, or: sudo apt-get install -y ${need[*]})" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
