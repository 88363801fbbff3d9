#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian 12 machine: compilers and
# CMake from Debian (python3-venv: tests/python installs the package into a fresh venv),
# the Python oracles from PyPI (tools/requirements.txt). Idempotent:
# does nothing when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
debs=(build-essential cmake clang libclang-rt-14-dev pkg-config python3 python3-pip python3-venv
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
# onnxruntime's C API header: the onnxruntime backend is compiled against it and loads
# libonnxruntime.so at run time (the library builds and runs without one). Debian ships
# it as libonnxruntime-dev from Debian 13 (trixie) on; Debian 12 has no such package,
# in bookworm-backports neither. There, apt downloads trixie's libonnxruntime-dev
# (checked against the archive's signed index, from the mirror this machine already
# uses) into a private folder, and only its headers are copied to
# /usr/local/include/onnxruntime; no trixie package is installed.
ort_header=onnxruntime/onnxruntime_c_api.h
if [ ! -f /usr/include/$ort_header ] && [ ! -f /usr/local/include/$ort_header ]; then
  sudo_=""
  [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  if apt-cache show libonnxruntime-dev >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq libonnxruntime-dev >/dev/null
  else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    . /etc/os-release
    mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' |
             awk -v r="$VERSION_CODENAME" '$2 == r {print $1; exit}')
    [ -n "$mirror" ] || { echo "install_deps: no apt source for $VERSION_CODENAME" >&2; exit 1; }
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
      >"$tmp/sources.list"
    mkdir -p "$tmp/lists/partial" "$tmp/deb"
    chmod 755 "$tmp"; chmod 777 "$tmp/deb"
    apt_=(-o Dir::Etc::sourcelist="$tmp/sources.list" -o Dir::Etc::sourceparts=-
          -o Dir::State::Lists="$tmp/lists" -o Debug::NoLocking=1)
    $sudo_ apt-get "${apt_[@]}" update -qq
    (cd "$tmp/deb" && $sudo_ apt-get "${apt_[@]}" download -qq libonnxruntime-dev)
    dpkg-deb -x "$tmp"/deb/libonnxruntime-dev_*.deb "$tmp/root"
    $sudo_ mkdir -p /usr/local/include
    $sudo_ cp -r "$tmp/root/usr/include/onnxruntime" /usr/local/include/
  fi
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
  pip_flags=(-q --disable-pip-version-check)
  # Debian's own python3 marks its packages externally managed (PEP 668) and pip then
  # refuses to install; the pinned test tools go beside them (/usr/local, or ~/.local).
  if python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'
  then
    pip_flags+=(--break-system-packages)
  fi
  python3 -m pip install "${pip_flags[@]}" -r "$here/requirements.txt"
fi
