#!/usr/bin/env bash
# Installs the real Lumberjack writers the tests run (tests/peers: npm's
# lumberjack-client and lumberjack-protocol, pinned by package-lock.json)
# into tests/peers/node_modules.  Idempotent: does nothing when what is
# installed is what the lock file pins.  Node and npm come from Debian
# (nodejs, npm) when the machine has no npm at all.
set -euo pipefail

. "$(dirname "$0")/apt-install.sh"
cd "$(dirname "$0")/../tests/peers"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  apt_install npm-peers nodejs npm
fi

# npm writes node_modules/.package-lock.json on every install: the same
# packages at the same versions as package-lock.json means nothing to do.
stamp=node_modules/.ripple-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" && [ -d node_modules/lumberjack-client ] \
  && [ -d node_modules/lumberjack-protocol ]; then
  exit 0
fi
echo "npm-peers: installing tests/peers (lumberjack-client, lumberjack-protocol)" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json "$stamp"
