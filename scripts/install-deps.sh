#!/usr/bin/env bash
# Installs the Debian packages RemoteSupport needs, if any is missing. Used by the demo and by CI.
set -euo pipefail
need=()
# chromium and chromium-driver: the web console's browser tests (tests/web/console_e2e.py); postgresql and libpq-dev:
# the PostgreSQL store and its throwaway test clusters (scripts/pg-cluster.sh); systemd: `systemd-analyze verify` of
# the unit file in deploy/ (the tests never start systemd itself); prometheus: a real server scrapes a node's /metrics
# (MetricsScrapeTests; the tests start their own, never the packaged service).
for package in libssl-dev libsqlite3-dev openssl iproute2 python3 python3-yaml curl chromium chromium-driver \
  postgresql libpq-dev systemd prometheus; do
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
# protocol/check_openapi.py needs PyYAML (python3-yaml above; from PyPI when python3 is not Debian's, e.g. pyenv's)
# and jsonschema (from PyPI); tests/web/console_e2e.py needs selenium (from PyPI; it drives Debian's chromedriver).
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check pyyaml
fi
if ! python3 -c 'import jsonschema' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check jsonschema
fi
if ! python3 -c 'import selenium' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check selenium
fi
