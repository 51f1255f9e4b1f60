#!/usr/bin/env bash
# Installs what the HTML report test needs (idempotent): Debian's chromium, which renders the
# report headless and writes the screenshot the test inspects (no npm, no browser download).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "install-report: $(chromium --version 2>/dev/null || chromium-browser --version)"
