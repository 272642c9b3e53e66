#!/usr/bin/env bash
# Make a Chromium available for Playwright: Debian's package when missing
# (apt, as root or through sudo), else Playwright's own download.
set -euo pipefail
for p in /usr/bin/chromium /usr/lib/chromium/chromium /usr/bin/chromium-browser; do
  [ -x "$p" ] && exit 0
done
echo "make: no Chromium found; installing one (Debian's package, else Playwright's download)"
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && exit 0
fi
"${1:-.venv/bin/python}" -m playwright install chromium
