#!/usr/bin/env python3
"""Packages the serving tests run on, written under OUT:

  stories260K/   llama2.c's stories260K as the model maker converts it (fp32, a trained
                 model: answers are readable), with a chat template (tokenizer_config.json)
  tiny-int4/     a random-weight qwen2-shaped decoder, small (hidden 128, 2 layers, vocab
                 16384, head 32), int4 MatMulNBits at accuracy_level 4: random weights and
                 a wide vocabulary give close logits, so greedy tokens expose arithmetic
                 that depends on the batch (with kernels that reduce differently for one
                 row and for many, 3 of 16 requests of engine-check change); also with a
                 chat template
  tiny-fp16/     the same weights in float16 (the fp16 KV and logits paths)
  hybrid-qwen3_5/  tools/make_model.py --type qwen3_5_text (seed 1, fp32): linear-attention
                 layers with conv and recurrent states, one GroupQueryAttention layer
  hybrid-lfm2/   tools/make_model.py --type lfm2 (seed 1, int4): short-conv layers with a
                 conv state and GroupQueryAttention layers
  hybrid-qwen3_5-int4/, hybrid-qwen3_5_moe/, hybrid-qwen3_5_moe-int4/, hybrid-lfm2-fp32/
                 the other types and dtypes of the same (int4: MatMulNBits at
                 accuracy_level 4); the engine batches them all with state slots, which
                 their engine and serve tests check
  window-gemma3-int4/  tools/make_model.py --type gemma3_text (seed 1, int4 level 4):
                 sliding-window layers with window-sized caches beside full ones, so the
                 engine's paged attention (all positions) meets the generator's window
                 caches (the resident rows only) and both must give the same bits

Usage: make_packages.py OUT. Exits 77 (skipped) when the shared stories260K checkpoint is
missing."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from model_maker import llama2c, synthetic  # noqa: E402
from model_maker.decoder import BuildOptions, DecoderSpec  # noqa: E402
from model_maker.package import write_package  # noqa: E402

# A ChatML template (the shape of Qwen's), written by these tests for packages that ship
# none: the server renders conversations through it.
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# stories260K has no special chat tokens: plain text turns, the story continues.
STORIES_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ message['content'] }}"
                    "{% if not loop.last %}{{ ' ' }}{% endif %}{% endfor %}")


def add_template(pkg, template):
    path = os.path.join(pkg, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


class Wide(synthetic.RandomWeights):
    """Larger weights than the maker's (0.02): with two small layers those give nearly
    flat attention, and greedy decoding falls into a one-token loop; these give varied
    continuations whose logits are still close (what an invariance test needs)."""
    STD = 0.12


def tiny(out, dtype):
    name = "tiny-serve"
    vocab = 16384
    synthetic.SPECIAL_TOKENS[name] = [(vocab - 3, "<|endoftext|>"), (vocab - 2, "<|im_start|>"),
                                      (vocab - 1, "<|im_end|>")]
    spec = DecoderSpec(model_type="qwen2", hidden_size=128, intermediate_size=256, num_layers=2,
                       num_heads=4, num_kv_heads=2, head_size=32, vocab_size=vocab,
                       context_length=1024, rms_eps=1e-6, rope_theta=10000.0, qkv_bias=True,
                       bos_token_id=vocab - 3, eos_token_id=vocab - 1, pad_token_id=vocab - 3)
    weights = Wide(spec, 11)
    tok = synthetic.tokenizer_json(name)
    cfg = synthetic.tokenizer_config(name, spec.context_length)
    cfg["eos_token"] = "<|im_end|>"
    write_package(out, spec, weights, BuildOptions(dtype=dtype, accuracy_level=4), tok, cfg)
    add_template(out, CHATML)


def hybrid(out, mtype, dtype):
    """A tiny random model of a hybrid type, as tools/make_model.py --type writes it."""
    import contextlib
    import io
    import make_model  # tools/, on the path above
    with contextlib.redirect_stdout(io.StringIO()):
        if make_model.main(["--type", mtype, "--dtype", dtype, "--seed", "1", "--out", out]) != 0:
            raise RuntimeError(f"make_model.py --type {mtype} --dtype {dtype} failed")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    shared = os.path.join(ROOT, "..", "shared", "models", "llama2c")
    ckpt, tokbin = os.path.join(shared, "stories260K.bin"), os.path.join(shared, "tok512.bin")
    if not os.path.exists(ckpt) or not os.path.exists(tokbin):
        print(f"SKIP: {ckpt} or {tokbin} is missing (the shared models are not beside the project)")
        return 77
    stories = os.path.join(out, "stories260K")
    if not os.path.exists(os.path.join(stories, "genai_config.json")):
        w = llama2c.Llama2cWeights(ckpt)
        spec = w.spec()
        pieces, scores, _ = llama2c.read_tokenizer_bin(tokbin, spec.vocab_size)
        write_package(stories, spec, w, BuildOptions(dtype="fp32"), llama2c.tokenizer_json(pieces, scores),
                      llama2c.tokenizer_config(spec.context_length))
        add_template(stories, STORIES_TEMPLATE)
    for sub, dtype in (("tiny-int4", "int4"), ("tiny-fp16", "fp16")):
        d = os.path.join(out, sub)
        if not os.path.exists(os.path.join(d, "genai_config.json")):
            tiny(d, dtype)
    for sub, mtype, dtype in (("hybrid-qwen3_5", "qwen3_5_text", "fp32"), ("hybrid-lfm2", "lfm2", "int4"),
                              ("hybrid-qwen3_5-int4", "qwen3_5_text", "int4"),
                              ("hybrid-qwen3_5_moe", "qwen3_5_moe_text", "fp32"),
                              ("hybrid-qwen3_5_moe-int4", "qwen3_5_moe_text", "int4"),
                              ("hybrid-lfm2-fp32", "lfm2", "fp32"),
                              ("window-gemma3-int4", "gemma3_text", "int4")):
        d = os.path.join(out, sub)
        if not os.path.exists(os.path.join(d, "genai_config.json")):
            hybrid(d, mtype, dtype)
    print(f"wrote {out}: stories260K, tiny-int4, tiny-fp16, hybrid-qwen3_5(-int4), hybrid-qwen3_5_moe(-int4), "
          "hybrid-lfm2(-fp32), window-gemma3-int4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
