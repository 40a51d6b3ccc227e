#!/usr/bin/env bash
# Installs the Debian packages the tests need: OCaml with bin_prot and
# sexplib (the real workers' serializers, for interop tests), tcpdump, and
# tshark (the dissectors `ripple wireshark` writes run in it: tests/wireshark;
# the tunnel tests check every tunnelled capture against its dissection).
# iproute2 (ip netns, veth, vxlan): the tunnel tests make real VXLAN captures
# in network namespaces (tests/capture/test_tunnels.py).
# jq, xxd and nc (netcat-openbsd) run the examples of README.md and the man
# pages (tests/docs).  ethtool: the reordering test captures over a veth pair
# between two network namespaces, offloads off (tests/capture/test_reordering.py).
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(
  ocaml-nox ocaml-findlib libbin-prot-ocaml-dev libppx-bin-prot-ocaml-dev
  libppx-sexp-conv-ocaml-dev libsexplib-ocaml-dev libfieldslib-ocaml-dev
  libvariantslib-ocaml-dev libppx-deriving-ocaml-dev
  tcpdump tshark iproute2 ethtool groff-base jq xxd netcat-openbsd
)
# wireshark-common asks whether non-root users may capture: no, and no question.
export APT_PRESEED="wireshark-common wireshark-common/install-setuid boolean false"
# Spark (ripple export/stats, tests/batch) runs on Java 17 or 21: a headless
# JRE when no java is on the PATH, or one older than 17 (Debian 12 has 17;
# later releases 21; the newer JRE becomes the default java).
java_major() {
  java -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p'
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  jre=openjdk-17-jre-headless
  if ! apt-cache show "$jre" >/dev/null 2>&1 && apt-cache show openjdk-21-jre-headless >/dev/null 2>&1; then
    jre=openjdk-21-jre-headless
  fi
  packages+=("$jre")
fi

. "$(dirname "$0")/apt-install.sh"
apt_install system-deps "${packages[@]}"
