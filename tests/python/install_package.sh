#!/usr/bin/env bash
# `pip install .` as a user runs it, into a fresh virtual environment: the package built
# from the source tree by its build backend (scikit-build-core drives CMake). The backend
# is the one pinned in tools/requirements.txt, already installed, so the test needs no
# network (--no-build-isolation: pip does not fetch it into a throwaway environment).
# The environment sees the system's site-packages for numpy and the test tools and
# oracles (pytest, onnx, onnxruntime, onnxruntime-genai, tokenizers), not for onnx_genai.
# CMake's build folder for the package is kept beside the venv (BUILD_DIR), so a second
# run in the same checkout recompiles only what changed; a fresh checkout builds it all.
#
#   install_package.sh VENV_DIR SOURCE_DIR BUILD_DIR
set -euo pipefail
venv=$1 src=$2 build=$3
rm -rf "$venv"
python3 -m venv --system-site-packages "$venv"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
start=$(date +%s)
# --config-settings, not its short form -C: Debian 12's venv brings pip 23.0, which lacks -C
"$venv/bin/python" -m pip install --disable-pip-version-check --no-build-isolation -q \
    --config-settings=build-dir="$build" "$src"
echo "pip install . took $(( $(date +%s) - start )) s"
cd "$venv"  # not the source tree: the installed package must be the one imported
"$venv/bin/python" - <<'PY'
import os, onnx_genai
here = os.path.dirname(onnx_genai.__file__)
assert "site-packages" in here, here
assert os.path.isfile(os.path.join(here, "libonnx_genai.so")), os.listdir(here)
print(f"onnx_genai {onnx_genai.__version__} installed in {here}")
PY
