#!/usr/bin/env bash
# Sourced by system-deps.sh, bench-deps.sh and npm-peers.sh: `apt_install NAME PACKAGE...`
# installs the Debian packages that are missing, as root or through sudo,
# without questions; does nothing when every one is already there.

apt_install() {
  local who=$1
  shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "$who: installing ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "$who: need root (or sudo) to install: ${missing[*]}" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ -n "${APT_PRESEED:-}" ]; then
    echo "$APT_PRESEED" | "${sudo[@]}" debconf-set-selections
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
