#!/usr/bin/env bash
# Installs the system packages lenspec needs on Debian 12, only those missing,
# and any packages named as arguments (make bench-peer adds PyTorch's).
# Run as root (CI is root) or with sudo available.
set -euo pipefail

pkgs=(libopenblas-dev coinor-libcbc-dev coinor-libclp-dev coinor-cbc pkg-config g++ trans-de-en dataset-fashion-mnist "$@")
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
