#!/usr/bin/env bash
# Install Debian's chromium for the test that opens `hourly watch`'s page in a real headless
# browser (tests/test_watch.py): idempotent, like docker-up.sh. Nothing is started; the test runs
# `chromium --headless ... --screenshot` itself. Under CI=true that test fails without it.
set -uo pipefail

CI_NAME=chromium-up
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v chromium >/dev/null 2>&1; then
    say "chromium already installed ($(chromium --version 2>/dev/null | head -1))"
    exit 0
fi
# fonts-dejavu-core: the page's text renders with a real font in the screenshot
apt_install " (the watch page's browser test)" chromium fonts-dejavu-core
command -v chromium >/dev/null 2>&1 || die "chromium is still not on PATH after the install"
say "chromium installed ($(chromium --version 2>/dev/null | head -1))"
