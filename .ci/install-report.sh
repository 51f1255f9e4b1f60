#!/usr/bin/env bash
# Installs what the HTML report tests need (idempotent): Debian's chromium, which renders the
# report headless, and playwright-core (npm, in tests/perfetto_harness/, the same harness as the
# Perfetto UI test) through which tests/test_report_readable.py checks the page's DOM and takes
# its screenshots. playwright-core drives the system chromium; it downloads no browser.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need_apt+=(chromium)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
[ -d tests/perfetto_harness/node_modules/playwright-core ] \
    || (cd tests/perfetto_harness && npm ci --no-audit --no-fund --loglevel=error)
echo "install-report: $(chromium --version 2>/dev/null || chromium-browser --version), playwright-core in tests/perfetto_harness"
