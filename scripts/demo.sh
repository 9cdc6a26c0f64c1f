#!/usr/bin/env bash
# The one-command demo: installs what is missing, builds both nodes, and runs a whole session over loopback TLS
# with freshly made development certificates, printing the timeline of both sides. Exits 0 when every step happened.
# --keep-running: afterwards, keep the supporter node up for the web console (it prints the URL and a login).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
echo "building the nodes (first build takes a few minutes)…"
swift build --product rsup-supporter >/dev/null
swift build --product rsup-device >/dev/null
exec python3 scripts/demo.py "$(swift build --show-bin-path)" "$@"
