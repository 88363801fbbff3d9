#!/usr/bin/env bash
# `onnx-genai bench` on the tiny GPT-2 package with tiny sizes: it must run and print a
# pp and a tg row (table) and a parseable JSON object; with its defaults, which must fit
# the package's 512 tokens of context. No timing is asserted.
# Usage: bench_smoke.sh ONNX_GENAI_BINARY SHARED_DIR   (exit 77: package missing, skip)
set -u
bin="$1"
gpt2="$2/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32"
[ -d "$gpt2" ] || { echo "SKIP: $gpt2 is missing"; exit 77; }
out=$("$bin" bench -m "$gpt2" -p 8 -n 4 -d 2 -r 2 --threads 2 --probe-mb 8 2>&1) || { echo "bench failed: $out"; exit 1; }
echo "$out"
echo "$out" | grep -Eq '^\| pp8@d2 +\| +[0-9.]+ ' || { echo "FAIL: no pp row"; exit 1; }
echo "$out" | grep -Eq '^\| tg4@d2 +\| +[0-9.]+ ' || { echo "FAIL: no tg row"; exit 1; }
echo "$out" | grep -q '^TTFT (pp8@d2)' || { echo "FAIL: no TTFT line"; exit 1; }
json=$("$bin" bench -m "$gpt2" -p 4 -n 2 -r 1 --probe-mb 0 --json 2>&1) || { echo "bench --json failed: $json"; exit 1; }
printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [t["name"] for t in d["tests"]]
assert names == ["pp4", "tg2"], names
assert all(t["tokens_per_s"]["median"] > 0 for t in d["tests"])
assert d["kv_bytes_per_position"] == 2 * 5 * 4 * 8 * 4, d["kv_bytes_per_position"]
' || { echo "FAIL: JSON: $json"; exit 1; }
# the defaults on a package of 512 tokens of context: pp512 would need 513, so pp256 and
# tg128; a -p that does not fit names the flag to lower
out=$("$bin" bench -m "$gpt2" -r 1 --threads 2 --probe-mb 0 2>&1) || { echo "FAIL: bench with its defaults: $out"; exit 1; }
echo "$out" | grep -Eq '^\| pp256 +\| +[0-9.]+ ' || { echo "FAIL: defaults: no pp256 row: $out"; exit 1; }
echo "$out" | grep -Eq '^\| tg128 +\| +[0-9.]+ ' || { echo "FAIL: defaults: no tg128 row: $out"; exit 1; }
out=$("$bin" bench -m "$gpt2" -p 512 -r 1 --probe-mb 0 2>&1) && { echo "FAIL: -p 512 on a 512-token package ran"; exit 1; }
echo "$out" | grep -q 'lower -p' || { echo "FAIL: -p 512: the error names no flag: $out"; exit 1; }
"$bin" bench -m "$gpt2" -p 4 -n 0 -r 1 --probe-mb 0 --bogus >/dev/null 2>&1 && { echo "FAIL: bad flag accepted"; exit 1; }
echo "ok"
