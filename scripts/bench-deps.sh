#!/usr/bin/env bash
# Installs the Debian packages only the benchmark needs, on top of
# system-deps.sh (OCaml, tcpdump): tshark, the anchor of the capture
# workload, socat, the anchor of the tap proxy workload, and ethtool, which
# turns the loopback's segmentation offloads off for the capture (the bench
# says so in one line and leaves them on when it is missing).
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(tshark socat ethtool)

# wireshark-common asks whether non-root users may capture (a setuid
# dumpcap): answer no beforehand, so that nothing waits for a terminal.
# The benchmark only reads files with tshark, which needs no privilege.
export APT_PRESEED="wireshark-common wireshark-common/install-setuid boolean false"
. "$(dirname "$0")/apt-install.sh"
apt_install bench-deps "${packages[@]}"
