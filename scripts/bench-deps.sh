#!/usr/bin/env bash
# Installs the Debian packages only the benchmark needs, on top of
# system-deps.sh (OCaml, tcpdump): tshark, the anchor of the capture
# workload, and socat, the anchor of the tap proxy workload.
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(tshark socat ethtool)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bench-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "bench-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture (a setuid
# dumpcap): answer no beforehand, so that nothing waits for a terminal.
# The benchmark only reads files with tshark, which needs no privilege.
echo "wireshark-common wireshark-common/install-setuid boolean false" | "${sudo[@]}" debconf-set-selections
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
