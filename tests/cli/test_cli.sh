#!/usr/bin/env bash
# The onnx-genai CLI as a user meets it: output of show/generate on real packages, and
# one-line errors with a non-zero exit on bad input.
# Usage: test_cli.sh BUILD_DIR SHARED_DIR
set -u
bin="$1/onnx-genai"
shared="$2"
gpt2="$shared/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

expect_out() { # name, regex, command...
  local name="$1" re="$2"; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ]; then bad "$name" "exit $rc: $out"; return; fi
  if printf '%s' "$out" | grep -Eq -- "$re"; then ok "$name"; else bad "$name" "output lacks /$re/: $out"; fi
}
expect_err() { # name, regex, command... : must exit non-zero with one line matching
  local name="$1" re="$2"; shift 2
  local out; out=$("$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -eq 0 ]; then bad "$name" "exited 0"; return; fi
  local lines; lines=$(printf '%s\n' "$out" | grep -c .)
  if printf '%s' "$out" | grep -Eq -- "$re"; then
    if [ "$lines" -le 2 ]; then ok "$name"; else bad "$name" "error is $lines lines: $out"; fi
  else bad "$name" "error lacks /$re/: $out"; fi
}

if [ ! -d "$gpt2" ]; then
  echo "SKIP: $gpt2 is missing (the shared test models are not beside the project)"
  skip=1
else
  expect_out show_ops '16  MatMul' "$bin" show "$gpt2/past.onnx"
  expect_out show_inputs 'past_0 +float32 +\[2, batch_size, 4, past_seq_len, 8\]' "$bin" show "$gpt2/past.onnx"
  expect_out show_contrib 'com\.microsoft\.Attention' "$bin" show "$gpt2/past.onnx"
  expect_out generate_ids '^0,0,195,731,731,114,114,114,114,114$' "$bin" generate -m "$gpt2" --ids 0,0,195,731 --max-length 10
  expect_out generate_json '"sequences": \[\[0, 0, 0, 52, 204, 204, 204, 204, 204, 204\], \[0, 0, 195, 731, 731, 114, 114, 114, 114, 114\]\]' \
    "$bin" generate "$gpt2" --ids 0,0,0,52 --ids 0,0,195,731 --max-length 10 --json
  expect_err generate_vocab 'token 15496 at position 0 is outside the vocabulary \[0, 1000\)' \
    "$bin" generate -m "$gpt2" -p "Hello" --max-length 10
  expect_err generate_too_long 'exceed max_length 3' "$bin" generate -m "$gpt2" --ids 1,2,3,4 --max-length 3
  expect_err generate_bad_flag "unknown argument '--bogus'" "$bin" generate -m "$gpt2" --bogus
  expect_err generate_bad_number "--top-p: 'abc' is not a number" "$bin" generate -m "$gpt2" --top-p abc
  expect_out show_package 'model\.type: +gpt2' "$bin" show "$gpt2"
  # the tool-call format serve will parse, read off the package's chat template
  tpl="$shared/chat-templates/templates"
  for pair in qwen2.5-7b-instruct:hermes llama-3.1-8b-instruct:llama3_json mistral-nemo-instruct-2407:mistral \
              deepseek-v3:deepseek command-r-plus-tool_use:command_r gemma-2-2b-it:none; do
    t=${pair%%:*} want=${pair#*:}
    if [ -f "$tpl/$t.jinja" ]; then
      mkdir -p "$tmp/tc-$t" && for f in "$gpt2"/*; do ln -sf "$(realpath "$f")" "$tmp/tc-$t/"; done
      cp "$tpl/$t.jinja" "$tmp/tc-$t/chat_template.jinja"
      expect_out "show_tool_calls_$t" "^tool calls: +$want " "$bin" show "$tmp/tc-$t"
    else
      echo "SKIP show_tool_calls_$t: $tpl/$t.jinja is missing"; skip=$((skip + 1))
    fi
  done
  mkdir -p "$tmp/warn" && ln -s "$(realpath "$gpt2/past.onnx")" "$tmp/warn/past.onnx" &&
    sed 's/"model": {/"model": {"frobnicate": 1, /' "$gpt2/genai_config.json" > "$tmp/warn/genai_config.json"
  expect_out generate_warns 'warning: .*model\.frobnicate: unknown key' "$bin" generate "$tmp/warn" --ids 0,0,195,731 --max-length 6
  # guidance: the random model's output is noise unless constrained
  expect_out generate_regex '"text": \[".* bet[0-9]{3}-[a-z]+"\]' \
    "$bin" generate "$gpt2" --ids 0,0,195,731 --max-length 24 --regex '[0-9]{3}-[a-z]+' --json
  expect_out generate_regex_sampled '"text": \[".* bet[0-9]{3}-[a-z]+"\]' \
    "$bin" generate "$gpt2" --ids 0,0,195,731 --max-length 24 --regex '[0-9]{3}-[a-z]+' \
    --do-sample --temperature 2 --top-k 0 --seed 7 --json
  printf 'start: answer\nanswer: "yes" | "no"\n' > "$tmp/yn.lark"
  expect_out generate_lark '"text": \[".* bet(yes|no)"\].*"generated_tokens": [1-4],' \
    "$bin" generate "$gpt2" --ids 0,0,195,731 --max-length 30 --lark "$tmp/yn.lark" --json
  printf '{"enum": ["yes", "no"]}' > "$tmp/yn.json"
  expect_out generate_json_schema '"text": \[".* bet\\"(yes|no)\\""\]' \
    "$bin" generate "$gpt2" --ids 0,0,195,731 --max-length 30 --json-schema "$tmp/yn.json" --json
  expect_out generate_json_object '"text": \[".* bet *\{' \
    "$bin" generate "$gpt2" --ids 0,0,195,731 --max-length 12 --json-object --json
  printf '{{ messages[-1].content }}' > "$tmp/plain.jinja"
  expect_out chat_regex '^[0-9]{3}-[a-z]+$' \
    "$bin" generate --chat "$gpt2" --template-file "$tmp/plain.jinja" -p a --max-length 16 \
    --regex '[0-9]{3}-[a-z]+'
  # run: every answer of a conversation under the guidance (the matcher starts again at
  # each answer); the random model's answers are noise unless constrained
  out=$(printf 'a\nb\nc\n' | "$bin" run "$gpt2" --template-file "$tmp/plain.jinja" --regex '(yes|no)' \
    --max-length 200 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c .)" = 3 ] &&
     [ "$(printf '%s\n' "$out" | grep -Ecx '(yes|no)')" = 3 ]; then ok run_regex_answers
  else bad run_regex_answers "exit $rc, want three lines yes|no: $out"; fi
  out=$(printf 'a\nb\n' | "$bin" run "$gpt2" --template-file "$tmp/plain.jinja" --json-schema "$tmp/yn.json" \
    --max-length 200 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -Ecx ' *"(yes|no)" *')" = 2 ]; then ok run_json_schema_answers
  else bad run_json_schema_answers "exit $rc, want two lines \"yes\"|\"no\": $out"; fi
  expect_err generate_bad_regex 'regex.*column 1' "$bin" generate "$gpt2" --ids 1 --regex '[0-9'
  expect_err generate_two_guidances 'already given by --regex' \
    "$bin" generate "$gpt2" --ids 1 --regex a --json-object
  expect_err generate_no_schema "--json-schema: cannot read '$tmp/none.json'" \
    "$bin" generate "$gpt2" --ids 1 --json-schema "$tmp/none.json"
  expect_err run_bad_lark "lark" "$bin" run "$gpt2" --template-file "$tmp/plain.jinja" \
    --lark "$tmp/yn.json"
  expect_err generate_guided_beams 'beam search' \
    "$bin" generate "$gpt2" --ids 1 --regex a --num-beams 2
  expect_out generate_help_guidance '--json-schema FILE' "$bin" generate --help
  expect_out run_help_guidance '--lark FILE' "$bin" run --help
  head -c 1000 "$gpt2/past.onnx" > "$tmp/truncated.onnx"
  expect_err show_truncated 'truncated.onnx: .*(truncated|past the end|remain)' "$bin" show "$tmp/truncated.onnx"
fi
q35="$shared/models/ortgenai/qwen3-5"
if [ -d "$q35" ]; then
  # a split hybrid package: its sessions, what feeds them, the state per layer, its images
  expect_out show_pipeline_stages "stage 1 'decoder': dummy_text.onnx" "$bin" show "$q35"
  expect_out show_pipeline_feeds 'inputs_embeds +<- stage 0 \(embedding\) output' "$bin" show "$q35"
  expect_out show_pipeline_state 'layer 2 +recurrent_state +float32 +state \[batch, 16, 128, 128\]' "$bin" show "$q35"
  expect_out show_pipeline_images 'images: +dummy_vision.onnx \(pixel_values, image_grid_thw' "$bin" show "$q35"
  expect_out generate_text_only '^2,3,4,0,0,0$' "$bin" generate "$q35" --ids 2,3,4 --max-length 6
else
  echo "SKIP qwen3-5 cases: $q35 is missing"; skip=$((skip + 1))
fi
pm="$shared/models/ortgenai/pipeline-model"
[ -d "$pm" ] && expect_out show_pipeline_config "config stage 1 'transformer': transformer.onnx" "$bin" show "$pm"
expect_err generate_no_model 'genai_config.json' "$bin" generate -m "$tmp/nowhere" --ids 1
expect_err show_missing 'nothing.onnx: cannot open' "$bin" show "$tmp/nothing.onnx"
expect_err infer_bad_input "--input expects NAME=PATH.pb" "$bin" infer x.onnx --input oops
expect_err serve_no_model 'give one of -m DIR and --models-dir DIR' "$bin" serve
expect_err serve_bad_flag "unknown option '--bogus'" "$bin" serve -m "$gpt2" --bogus
expect_err serve_bad_port "--port: 70000 is out of range \[0, 65535\]" "$bin" serve -m "$gpt2" --port 70000
expect_err serve_bad_host "--host 'no-such-host.invalid': not an IPv4 or IPv6 address, nor a name" "$bin" serve -m "$gpt2" --host no-such-host.invalid --port 0
expect_err serve_no_package 'nowhere.*genai_config.json' "$bin" serve -m "$tmp/nowhere" --port 0
mkdir -p "$tmp/no-packages"
expect_err serve_empty_models_dir 'has no package folder' "$bin" serve --models-dir "$tmp/no-packages" --port 0
expect_out serve_help 'POST /v1/chat/completions' "$bin" serve --help
# every command's --help: its usage on stdout, exit 0
for c in generate show infer bench bench-load parity run template serve; do
  expect_out "${c}_help" "^usage: onnx-genai $c " "$bin" "$c" --help
done
expect_err infer_bad_threads "--threads: -1 is too small: at least 0" "$bin" infer x.onnx --threads -1
expect_err bench_load_bad_repeat "--repeat: 'x' is not a number" "$bin" bench-load x.onnx --repeat x
expect_err bench_load_extra "bench-load: unexpected argument '7'" "$bin" bench-load x.onnx 7
# --version: the project's version (CMakeLists.txt) and the commit of this checkout (or
# one before it: a commit may land between the build and the test)
src=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n 's/^project(onnx_genai VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
out=$("$bin" --version 2>&1)
if git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
  built=$(printf '%s' "$out" | sed -n "s/^onnx-genai ${version//./\\.} (git \([0-9a-f]\{12\}\)\(-dirty\)\{0,1\})\$/\1/p")
  if [ -n "$built" ] && git -C "$src" merge-base --is-ancestor "$built" HEAD 2>/dev/null; then ok version
  else bad version "'$out' is not 'onnx-genai $version (git <a commit of this checkout>)'"; fi
else
  expect_out version "^onnx-genai ${version//./\\.}\$" "$bin" --version
fi
"$bin" frobnicate >/dev/null 2>&1; [ $? -eq 2 ] && ok unknown_command || bad unknown_command "exit status is not 2"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
