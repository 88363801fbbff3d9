#!/usr/bin/env python3
"""One script, two runtimes: run with `onnxruntime_genai` and with `onnx_genai` (only the
import differs) on a package, it prints one JSON record per line: what the API returned
for greedy search (batch 1 for each of two prompts, and the two as a padded batch 2, once
stopping on an EOS), beam search, rewind, next tokens, streaming decode, encode/decode
and the logits.
tests/python/test_same_script.py runs it twice and compares the records.

  same_script.py RUNTIME PACKAGE --ids 1,2,3 --ids 4,5 [--text "Once upon a time" ...]
                 [--new 12]

--ids: prompts as token ids (the first is the batch-1 prompt; the first two make the
batch); --text: texts for the tokenizer records (the package must have tokenizer.json).
"""
import argparse
import importlib
import json
import sys

import numpy as np


def emit(kind, **fields):
    print(json.dumps({"kind": kind, **fields}, ensure_ascii=False), flush=True)


def ints(a):
    return [int(x) for x in np.asarray(a).reshape(-1)]


def sample_logits(arr):
    """Shape, dtype and a sample of the values (every 97th of the flattened array)."""
    a = np.asarray(arr)
    return {"shape": list(a.shape), "dtype": str(a.dtype),
            "values": [float(x) for x in a.astype(np.float64).reshape(-1)[::97][:64]]}


def open_model(og, path, overlay=None):
    config = og.Config(path)
    config.clear_providers()  # the CPU, whatever the package's provider options say
    if overlay:
        config.overlay(json.dumps(overlay))
    return og.Model(config)


def generator(og, model, **search):
    params = og.GeneratorParams(model)
    params.set_search_options(**search)
    return og.Generator(model, params)


def run_to_end(gen, stream=None, row=0, gaps=None):
    """Generates to the end; returns each step's next tokens and the stream's pieces.
    gaps (a list) gets each step's margin between the two largest logits of row 0."""
    steps, pieces = [], []
    while not gen.is_done():
        if gaps is not None:
            top = np.sort(np.asarray(gen.get_logits(), dtype=np.float64).reshape(-1))[-2:]
            gaps.append(float(top[1] - top[0]))
        gen.generate_next_token()
        nxt = gen.get_next_tokens()
        steps.append(ints(nxt))
        if stream is not None:
            pieces.append(stream.decode(int(nxt[row])))
    return steps, pieces


def padded_batch(rows, pad):
    width = max(len(r) for r in rows)
    return np.array([r + [pad] * (width - len(r)) for r in rows], dtype=np.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runtime", choices=["onnxruntime_genai", "onnx_genai"])
    ap.add_argument("package")
    ap.add_argument("--ids", action="append", required=True)
    ap.add_argument("--text", action="append", default=[])
    ap.add_argument("--new", type=int, default=12)
    args = ap.parse_args()
    og = importlib.import_module(args.runtime)  # the only difference between the runs
    prompts = [[int(x) for x in s.split(",")] for s in args.ids]
    p0 = prompts[0]
    max_len = max(len(p) for p in prompts[:2]) + args.new

    model = open_model(og, args.package)
    emit("model", type=model.type)
    tok = og.Tokenizer(model) if args.text else None

    if tok is not None:
        for t in args.text:
            emit("encode", text=t, ids=ints(tok.encode(t)))
        emit("encode_batch", texts=args.text, ids=tok.encode_batch(args.text).as_numpy().tolist())
        emit("decode", ids=p0, text=tok.decode(np.array(p0, dtype=np.int32)))

    # greedy, batch 1, with streaming decode and the logits
    gen = generator(og, model, max_length=max_len, do_sample=False)
    gen.append_tokens(np.array(p0, dtype=np.int32))
    prompt_logits = np.asarray(gen.get_output("logits"))
    emit("prompt_logits", **sample_logits(prompt_logits))
    emit("prompt_logits_last", **sample_logits(prompt_logits[:, -1, :]))
    emit("next_logits", **sample_logits(gen.get_logits()))
    stream = tok.create_stream() if tok is not None else None
    gaps = []
    steps, pieces = run_to_end(gen, stream, gaps=gaps)
    seq = ints(gen.get_sequence(0))
    emit("greedy", ids=seq, next=steps, gaps=gaps)
    emit("step_logits", **sample_logits(gen.get_output("logits")))
    if tok is not None:
        emit("stream", ids=seq[len(p0):], pieces=pieces)
        emit("decode", ids=seq, text=tok.decode(gen.get_sequence(0)))

    # rewind into the generated part and continue; then into the prompt and append
    cut = len(p0) + (len(seq) - len(p0)) // 2
    gen.rewind_to(cut)
    run_to_end(gen)
    emit("rewind", to=cut, ids=ints(gen.get_sequence(0)))
    gen.rewind_to(len(p0) - 1)
    gen.append_tokens(np.array(p0[-1:], dtype=np.int32))
    run_to_end(gen)
    emit("rewind_append", to=len(p0) - 1, ids=ints(gen.get_sequence(0)))

    # greedy, batch 1, the second prompt: what its row of the batch below should hold
    gen = generator(og, model, max_length=max_len, do_sample=False)
    gen.append_tokens(np.array(prompts[1], dtype=np.int32))
    steps, _ = run_to_end(gen)
    emit("single1", ids=ints(gen.get_sequence(0)), next=steps)

    # greedy, batch 2 (rows right-padded with the pad token)
    pad = int(og.Tokenizer(model).pad_token_id) if tok is not None else None
    if pad is None:
        with open(f"{args.package}/genai_config.json") as f:
            pad = int(json.load(f)["model"].get("pad_token_id", 0))
    batch = padded_batch(prompts[:2], pad)
    gen = generator(og, model, max_length=max_len, batch_size=2, do_sample=False)
    gen.append_tokens(batch)
    steps, _ = run_to_end(gen)
    rows = [ints(gen.get_sequence(i)) for i in range(2)]
    emit("batch2", rows=rows, next=steps)
    if tok is not None:
        emit("decode_batch", texts=tok.decode_batch(og.Tensor(np.array(rows, dtype=np.int32))))

    # batch 2 again with an EOS that the second row generates early: the rows stop apart
    row1 = rows[1]
    gen_tokens = [t for t in row1[len(batch[1]):] if t != pad]
    if len(gen_tokens) >= 3:
        eos = gen_tokens[2]
        model_eos = open_model(og, args.package, {"model": {"eos_token_id": eos}})
        gen = generator(og, model_eos, max_length=max_len, batch_size=2, do_sample=False)
        gen.append_tokens(batch)
        steps, _ = run_to_end(gen)
        emit("batch2_eos", eos=eos, rows=[ints(gen.get_sequence(i)) for i in range(2)],
             next=steps)

    # beam search, batch 1
    gen = generator(og, model, max_length=len(p0) + min(args.new, 8), num_beams=4,
                    num_return_sequences=2, length_penalty=1.0, early_stopping=True)
    gen.append_tokens(np.array(p0, dtype=np.int32))
    steps, _ = run_to_end(gen)
    emit("beams", ids=[ints(gen.get_sequence(i)) for i in range(2)], next=steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
