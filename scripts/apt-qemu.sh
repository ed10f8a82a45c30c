#!/usr/bin/env bash
# Installs Debian's qemu-system packages named (as root) from the release
# of the qemu already on the machine. A machine whose qemu-utils is a
# backport (a Debian 12 image with qemu-img 10.0 from bookworm-backports)
# refuses bookworm's qemu-system 7.2: qemu-utils breaks qemu-system-common
# before 8.0. apt then fails on the whole transaction or removes
# qemu-utils, so the packages come from the backports suite too (added to
# apt's sources in a file of its own), in qemu-utils' version.
#   scripts/apt-qemu.sh qemu-system-misc qemu-system-x86
set -euo pipefail
[ $# -gt 0 ] || { echo "apt-qemu: name the qemu-system packages" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
release=()
installed=$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)
if [[ $installed == *~bpo* ]]; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    suite=$codename-backports
    list=/etc/apt/sources.list.d/ksym-$suite.list
    if ! grep -rqs "$suite" /etc/apt/sources.list /etc/apt/sources.list.d; then
        echo "deb http://deb.debian.org/debian $suite main" > "$list"
        apt-get update -qq
    fi
    release=(-t "$suite")
fi
apt-get install -y -qq "${release[@]}" "$@" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq "${release[@]}" "$@" >/dev/null; }
