#!/usr/bin/env bash
# System packages the platform needs: bubblewrap (the grading sandbox), g++ (C++ extension
# tasks), and Chromium with its driver (browser tests). Installed with apt-get when running as
# root; otherwise we say exactly what to install and stop.
set -euo pipefail

needed=()
command -v bwrap >/dev/null 2>&1 || needed+=(bubblewrap)
command -v g++ >/dev/null 2>&1 || needed+=(g++)
command -v chromium >/dev/null 2>&1 || needed+=(chromium)
command -v chromedriver >/dev/null 2>&1 || needed+=(chromium-driver)
command -v node >/dev/null 2>&1 || needed+=(nodejs npm)
ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 || needed+=(libseccomp2)

if [ ${#needed[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "Missing system packages: ${needed[*]}" >&2
    echo "Install them with: sudo apt-get install -y ${needed[*]}" >&2
    exit 1
fi
echo "Installing system packages: ${needed[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${needed[@]}"
