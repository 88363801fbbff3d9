#!/usr/bin/env python3
"""The layer rule of docs/ARCHITECTURE.md, checked on the includes of src/.

Every `#include "..."` of a file under src/ must point to its own layer or one below it,
and nothing above the backend seam (src/backends/backend.h and its neighbours) may
include a backend's own files (src/backends/native/..., src/backends/ort/...). Inside
the native backend, each kernel family (a folder under kernels/) may include the
kernels' shared files and other families, but the families' includes must not form a
circle. A violation is printed as FILE:LINE with the include, the two layers and why;
the exit status is 1 when there is any.

Usage: check_layers.py [SRC_DIR]          (default: the src/ beside tests/)
       check_layers.py --selftest         (plants bad includes in a copy of src/ and
                                            checks that each is reported)
"""
import os
import re
import shutil
import sys
import tempfile

# Layers, bottom to top, and what each may include besides itself and the public header
# (include/onnx_genai.h, which every layer may use). "seam" is src/backends/*.{c,h}.
ALLOWED = {
    "base": set(),
    "graph": {"base"},
    "onnx": {"base", "graph"},
    "tokenizer": {"base"},
    "chat": {"base"},
    "guide": {"base"},
    "media": {"base"},
    "seam": {"base", "graph"},
    "kernels": {"base", "graph", "seam"},
    "native": {"base", "graph", "onnx", "seam", "kernels"},
    "ort": {"base", "graph", "onnx", "seam"},
    "runtime": {"base", "graph", "onnx", "seam"},
    "genai": {"base", "graph", "onnx", "tokenizer", "chat", "guide", "media", "seam", "runtime"},
    "engine": {"base", "graph", "onnx", "tokenizer", "chat", "guide", "media", "seam", "runtime",
               "genai"},
    "serve": {"base", "graph", "onnx", "tokenizer", "chat", "guide", "media", "seam", "runtime",
              "genai", "engine"},
    "convert": {"base"},
    "hub": {"base"},
    "cli": {"base", "graph", "onnx", "tokenizer", "chat", "guide", "media", "seam", "runtime",
            "genai", "engine", "serve", "convert", "hub"},
}
BACKEND_INTERNALS = {"kernels", "native", "ort"}
PUBLIC = "onnx_genai.h"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def unit(rel):
    """(layer, kernel family or None) of a path relative to src/, or None when the path
    is in no layer."""
    parts = rel.split("/")
    if parts[0] == "backends":
        if len(parts) == 2:
            return "seam", None
        if parts[1] == "native":
            if len(parts) >= 4 and parts[2] == "kernels":
                return "kernels", (parts[3] if len(parts) >= 5 else None)
            return "native", None
        if parts[1] == "ort":
            return "ort", None
        return None
    if parts[0] in ALLOWED and len(parts) >= 2:
        return parts[0], None
    return None


def sources(src):
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                path = os.path.join(root, f)
                yield os.path.relpath(path, src).replace(os.sep, "/"), path


def check(src):
    """The violations, as printable lines."""
    bad = []
    family_edges = {}  # (from family, to family) -> first "file:line"
    for rel, path in sources(src):
        me = unit(rel)
        if me is None:
            bad.append(f"src/{rel}: in no layer of the architecture (add it to "
                       "tests/layers/check_layers.py and docs/ARCHITECTURE.md)")
            continue
        layer, family = me
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if target == PUBLIC:
                    continue
                if not os.path.isfile(os.path.join(src, target)):
                    bad.append(f"src/{rel}:{no}: #include \"{target}\" is not a path under "
                               "src/ (includes name their file from src/)")
                    continue
                them = unit(target)
                if them is None:
                    bad.append(f"src/{rel}:{no}: #include \"{target}\": the target is in no "
                               "layer")
                    continue
                tl, tf = them
                where = f"src/{rel}:{no}: #include \"{target}\""
                if tl == layer:
                    if layer == "kernels" and family and tf and tf != family:
                        family_edges.setdefault((family, tf), where)
                    continue
                if tl in ALLOWED[layer]:
                    continue
                if tl in BACKEND_INTERNALS and layer not in BACKEND_INTERNALS:
                    why = ("reaches across the backend seam: layers above it see only "
                           "src/backends/*.h")
                elif layer in ALLOWED[tl]:
                    why = "points up"
                else:
                    why = "points sideways"
                bad.append(f"{where}: {layer} -> {tl} {why} (allowed from {layer}: "
                           f"{', '.join(sorted(ALLOWED[layer])) or 'nothing'})")
    bad += family_cycles(family_edges)
    return bad


def family_cycles(edges):
    """A circle among the kernel families' includes, reported with one include per arrow."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state, stack, found = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                ring = stack[stack.index(m):] + [m]
                arrows = [edges[(ring[i], ring[i + 1])] for i in range(len(ring) - 1)]
                found.append("kernel families include each other in a circle "
                             f"{' -> '.join(ring)}: " + "; ".join(arrows))
            elif state.get(m) is None:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if state.get(n) is None:
            visit(n)
    return found


def selftest(src):
    """Plants each kind of violation in a copy of src/ and checks it is reported."""
    plants = [
        ("base/status.c", '#include "serve/serve.h"', "base -> serve points up"),
        ("genai/model.c", '#include "backends/native/native_session.h"',
         "reaches across the backend seam"),
        ("tokenizer/tok_bpe.c", '#include "chat/chat.h"', "tokenizer -> chat points sideways"),
        ("backends/native/kernels/matmul/gemm_f32.c",
         '#include "backends/native/kernels/moe/moe.h"', "circle"),
    ]
    failures = 0
    for rel, line, expect in plants:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "src")
            shutil.copytree(src, copy)
            path = os.path.join(copy, rel)
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(line + "\n" + text)
            bad = check(copy)
            hit = [b for b in bad if expect in b and (rel in b or expect == "circle")]
            if not hit:
                print(f"selftest: planting {line} in src/{rel} was not reported as '{expect}'; "
                      f"got: {bad}")
                failures += 1
            else:
                print(f"selftest: planted {line} in src/{rel}: {hit[0]}")
    if check(src):
        print("selftest: the tree itself has violations (run without --selftest)")
        failures += 1
    return failures


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(os.path.dirname(os.path.dirname(here)), "src")
    if argv[1:2] == ["--selftest"]:
        return 1 if selftest(default) else 0
    src = argv[1] if len(argv) > 1 else default
    bad = check(src)
    for b in bad:
        print(b)
    n = sum(1 for _ in sources(src))
    print(f"layers: {n} files, {len(bad)} violation{'s' if len(bad) != 1 else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
