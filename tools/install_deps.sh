#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian 12 machine: compilers and
# CMake from Debian, the Python oracles from PyPI (tools/requirements.txt). Idempotent:
# does nothing when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
debs=(build-essential cmake clang libclang-rt-14-dev pkg-config python3 python3-pip
      libcjson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev chromium tmux)
missing=()
for p in "${debs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_=""
  [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! python3 - "$here/requirements.txt" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    if version(name) != want:
        sys.exit(1)
PY
then
  python3 -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
fi
