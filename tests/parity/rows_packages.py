#!/usr/bin/env python3
"""Runs rows-check over every package the type_packages and serve_packages fixtures wrote
and the shared builder packages of hf-internal-testing (gpt2 fp32 and fp16, qwen fp16),
see rows_check.c. Skips loudly when no folder holds a package.

Usage: rows_packages.py ROWS_CHECK TYPES_DIR SERVE_DIR SHARED_MODELS_DIR
"""
import os
import subprocess
import sys


def packages(root):
    if not os.path.isdir(root):
        return []
    return sorted(os.path.join(root, d) for d in os.listdir(root)
                  if os.path.exists(os.path.join(root, d, "genai_config.json")))


def main():
    exe, types_dir, serve_dir, shared = sys.argv[1:5]
    hf = os.path.join(shared, "ortgenai", "hf-internal-testing")
    dirs = packages(types_dir) + packages(serve_dir) + packages(hf)
    if not packages(hf):
        print(f"note: no shared packages under {hf}: the builder's gpt2/qwen fp16 are not checked")
    if not dirs:
        print(f"SKIP: no packages under {types_dir}, {serve_dir} or {hf}")
        sys.exit(77)
    r = subprocess.run([exe, *dirs])
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
