#!/usr/bin/env python3
"""Write onnxruntime-genai model packages in the model builder's layout.

  make_model.py --from-llama2c CKPT --tokenizer TOK --out DIR [--dtype fp32|fp16|int4]
                [--accuracy-level 0|4] [--rotary-interleaved] [--asymmetric]
  make_model.py --synthetic qwen2.5-0.5b|qwen2.5-1.5b|qwen2.5-3b|qwen3-0.6b|llama-3.2-1b|llama-3.1-8b|phi-3-mini|phi-4-mini
                --out DIR
                [--dtype int4] [--seed N] [--layers N]
  make_model.py --type MODEL_TYPE --out DIR [--dtype fp32|int4] [--seed N] [--layers N]
                a tiny random model of an onnxruntime-genai model type (llama, qwen3, gemma2,
                gptoss, lfm2, qwen3_5_text, qwen3_5_moe_text, ...; qwen3_5, qwen3_5_moe,
                qwen2_5_vl, qwen3_vl, phi3v and gemma3 are split vision-language packages:
                vision + embedding + text decoder; phi3v wants --context 4096 or more, an
                image taking ~2,000 tokens)
  make_model.py --real qwen3.5-0.8b|lfm2-350m --out DIR [--dtype int4] [--split]
                random weights at a released model's real shapes (benchmarks)
  ... --pipeline: the same model as a decoder-pipeline package (three graphs)
  ... --lora all|PROJ,...: LoRA A/B graph inputs with empty defaults (adapter-ready)
  ... --kv-cache-quant-scheme int8_per_tensor|... --kv-cache-scale-file JSON: the builder's
      quantized KV caches (model_maker/kvquant.py)

Needs onnx and numpy only.
"""

import argparse
import json
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model_maker import catalog, kvquant, llama2c, synthetic  # noqa: E402
from model_maker.decoder import BuildOptions  # noqa: E402
from model_maker.package import write_arch_package, write_package, write_sentence_transformers  # noqa: E402
from model_maker.weights import RandomTensors  # noqa: E402


LORA_ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-llama2c", metavar="CKPT", help="llama2.c checkpoint (legacy float32 format)")
    src.add_argument("--synthetic", choices=sorted(synthetic.SPECS), help="random weights at real shapes")
    src.add_argument("--type", choices=sorted(catalog.TINY) + sorted(catalog.SPLIT) + sorted(catalog.VL),
                     help="a tiny random model of this onnxruntime-genai model type")
    src.add_argument("--real", choices=sorted(catalog.REAL), help="random weights at a released model's shapes")
    ap.add_argument("--tokenizer", metavar="TOK", help="llama2.c tokenizer.bin (with --from-llama2c)")
    ap.add_argument("--out", required=True, help="package folder to write")
    ap.add_argument("--dtype", choices=["fp32", "fp16", "int4"], default=None,
                    help="weights/activations: fp32, fp16, or int4 MatMulNBits with fp32 activations "
                         "(default fp32 for llama2.c, int4 for synthetic)")
    ap.add_argument("--accuracy-level", type=int, choices=[0, 1, 2, 3, 4], default=4,
                    help="MatMulNBits accuracy_level (builder's CPU default 4; 0 omits the attribute)")
    ap.add_argument("--block-size", type=int, default=32, choices=[16, 32, 64, 128])
    ap.add_argument("--asymmetric", action="store_true",
                    help="int4 with zero points (builder default is symmetric: none)")
    ap.add_argument("--shared-embeddings", action="store_true",
                    help="tied models: read the embedding from lm_head's weight (int4: "
                         "GatherBlockQuantized; float: Transpose+Gather) instead of a separate fp32 copy; "
                         "with --type/--real: tie them (what the builder writes for a config with "
                         "tie_word_embeddings)")
    ap.add_argument("--rotary-interleaved", action="store_true",
                    help="llama2.c: keep q/k rows as trained, rotary_interleaved=1 in GQA")
    ap.add_argument("--head-multiple", type=int, default=16,
                    help="pad head_size with zero dimensions to this multiple, exactly (onnxruntime's "
                         "GroupQueryAttention needs 16); 0 keeps the model's head size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", choices=["uniform", "transformers"], default="uniform",
                    help="--type/--real weights: uniform with the catalog's std (default), or "
                         "drawn as transformers initialises a model for its config (normal "
                         "std 0.02, norms 1, biases 0)")
    ap.add_argument("--layers", type=int, default=None, help="synthetic, --type, --real: fewer layers")
    ap.add_argument("--full-kv", action="store_true",
                    help="--type/--real: full-length KV caches on sliding-window layers (the builder's "
                         "windowed_kv_cache=false; local_window_size stays)")
    ap.add_argument("--rope-scaling", metavar="JSON", default=None,
                    help="--type/--real: a Hugging Face rope_scaling object (rope_type linear, llama3, "
                         "yarn, longrope, dynamic, with its keys and original_max_position_embeddings), "
                         "baked into the rotary caches as the builder does for that model type "
                         "(model_maker/rope.py); longrope writes the short/long If")
    ap.add_argument("--context", type=int, default=None,
                    help="--type/--real: max_position_embeddings (rotary cache rows, context_length)")
    ap.add_argument("--split", action="store_true",
                    help="--real qwen3.5-*: a split vision-language package (model.type qwen3_5)")
    ap.add_argument("--pipeline", action="store_true",
                    help="write a decoder-pipeline package instead: embeds.onnx -> transformer.onnx "
                         "-> lm_head.onnx, values passed by name")
    ap.add_argument("--lora", metavar="PROJ,...", default="",
                    help="give these projections a LoRA path whose A/B weights are graph inputs with "
                         "empty defaults (an adapter-ready package for .onnx_adapter files): 'all' for "
                         "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj (q/k/v then unpacked, "
                         "as the builder writes them with LoRA); qkv_proj: LoRA on the packed one")
    ap.add_argument("--kv-cache-quant-scheme", default="none", metavar="SCHEME",
                    help="the builder's kv_cache_quant_scheme: int8_per_tensor, int8_per_channel, "
                         "int4_per_tensor, int4_per_channel (fp8_*: onnxruntime's CPU has no kernel); "
                         "needs --kv-cache-scale-file")
    ap.add_argument("--kv-cache-scale-file", metavar="JSON",
                    help="the builder's kv_cache_scale_file (scales.k_scales / v_scales per layer, "
                         "optional layer_ids and qmax); see model_maker/kvquant.py")
    ap.add_argument("--hidden-states", choices=["include", "exclude"], default="",
                    help="the final norm's output as a graph output 'hidden_states' (what embeddings "
                         "are made of): beside the logits (the builder's include_hidden_states) or "
                         "instead of them, without an lm_head (exclude_lm_head)")
    ap.add_argument("--no-kv", action="store_true",
                    help="no past/present cache inputs and outputs (an embedding export: each run "
                         "starts empty); attention-only models")
    ap.add_argument("--st-pooling", choices=["cls", "mean", "lasttoken"], default=None,
                    help="write sentence-transformers' modules.json and 1_Pooling/config.json with "
                         "this pooling mode")
    ap.add_argument("--st-normalize", action="store_true",
                    help="with --st-pooling: a Normalize module too (unit vectors)")
    a = ap.parse_args(argv)
    if a.kv_cache_quant_scheme != "none" and not a.kv_cache_scale_file:
        ap.error("--kv-cache-quant-scheme needs --kv-cache-scale-file (as the builder needs "
                 "kv_cache_scale_file)")
    a.lora = tuple(LORA_ALL if a.lora == "all" else [p for p in a.lora.split(",") if p])

    if a.type or a.real:
        return make_arch(ap, a)
    if a.from_llama2c:
        if not a.tokenizer:
            ap.error("--from-llama2c needs --tokenizer")
        weights = llama2c.Llama2cWeights(a.from_llama2c, keep_interleaved=a.rotary_interleaved)
        spec = weights.spec()
        pieces, scores, _ = llama2c.read_tokenizer_bin(a.tokenizer, spec.vocab_size)
        tok = llama2c.tokenizer_json(pieces, scores)
        tok_cfg = llama2c.tokenizer_config(spec.context_length)
        dtype = a.dtype or "fp32"
        if a.shared_embeddings and not weights.shared:
            ap.error("--shared-embeddings needs a checkpoint with a shared classifier")
    else:
        spec = synthetic.make_spec(a.synthetic, a.layers)
        weights = synthetic.RandomWeights(spec, a.seed)
        tok = synthetic.tokenizer_json(a.synthetic)
        tok_cfg = synthetic.tokenizer_config(a.synthetic, spec.context_length)
        dtype = a.dtype or "int4"

    opts = BuildOptions(dtype=dtype, accuracy_level=a.accuracy_level, block_size=a.block_size,
                        symmetric=not a.asymmetric, head_multiple=a.head_multiple,
                        shared_embeddings=a.shared_embeddings, lora=a.lora,
                        hidden_states=a.hidden_states, no_kv=a.no_kv)
    opts = kv_quant_options(ap, a, opts, list(range(spec.num_layers)), spec.num_layers,
                            spec.num_kv_heads, [spec.head_size])
    out = a.out
    if a.pipeline:
        import tempfile
        tmp = tempfile.TemporaryDirectory()
        out = tmp.name
    info = write_package(out, spec, weights, opts, tok, tok_cfg)
    if a.pipeline:
        from model_maker.pipeline import split_package
        files = split_package(out, a.out)
        info["dir"] = a.out
        print("decoder-pipeline: " + " -> ".join(files))
    if a.st_pooling:
        write_sentence_transformers(a.out, a.st_pooling, a.st_normalize)
    print(f"wrote {info['dir']}: model.onnx {info['model_bytes']} B, model.onnx.data {info['data_bytes']} B, "
          f"{info['initializers']} initializers")
    if info["head_size"] != info["true_head_size"]:
        print(f"head_size {info['true_head_size']} padded to {info['head_size']} (zero dimensions)")
    print("ops: " + ", ".join(f"{k} {v}" for k, v in info["ops"].items()))
    return 0


def kv_quant_options(ap, a, opts, kv_layers, num_layers, kv_heads, head_sizes):
    """opts with the builder's quantized KV caches (--kv-cache-quant-scheme) and their scales."""
    if a.kv_cache_quant_scheme == "none":
        return opts
    if len(set(head_sizes)) > 1:
        ap.error("--kv-cache-quant-scheme: the attention layers' head sizes differ")
    try:
        scales = kvquant.load_scales(a.kv_cache_scale_file, a.kv_cache_quant_scheme, kv_layers,
                                     num_layers, kv_heads, head_sizes[0])
    except (OSError, ValueError) as e:
        ap.error(str(e))
    return replace(opts, kv_quant=a.kv_cache_quant_scheme, kv_scales=scales)


def make_arch(ap, a):
    if a.pipeline or a.tokenizer:
        ap.error("--type/--real take neither --pipeline nor --tokenizer")
    split = a.split or a.type in catalog.SPLIT or a.type in catalog.VL
    arch = catalog.tiny(a.type, a.layers) if a.type else catalog.real(a.real, a.layers)
    if a.shared_embeddings:
        arch = replace(arch, tied=True)
    if a.full_kv:
        arch = replace(arch, window_cache=False)
    if a.context:
        arch = replace(arch, context=a.context)
    if a.rope_scaling is not None:
        arch = replace(arch, rope_scaling=json.loads(a.rope_scaling))
    if a.split and not arch.model_type.startswith("qwen3_5"):
        ap.error("--split is for Qwen3.5 models")
    dtype = a.dtype or ("fp32" if a.type else "int4")
    opts = BuildOptions(dtype=dtype, accuracy_level=a.accuracy_level, block_size=a.block_size,
                        symmetric=not a.asymmetric, head_multiple=0, lora=a.lora,
                        hidden_states=a.hidden_states, no_kv=a.no_kv)
    kv = list(arch.attention_layers())
    opts = kv_quant_options(ap, a, opts, kv, arch.layers, arch.kv_heads, [arch.hd(i) for i in kv])
    ids = None
    if split:
        v = arch.vocab
        ids = catalog.QWEN35_VISION_IDS if a.type else dict(
            vision_start_token_id=v - 7, image_token_id=v - 5, video_token_id=v - 4)
    weights = RandomTensors(a.seed, arch.weight_std, a.init)
    try:
        info = write_arch_package(a.out, arch, opts, weights, split_ids=ids)
    except ValueError as e:
        ap.error(str(e))
    if a.st_pooling:
        write_sentence_transformers(a.out, a.st_pooling, a.st_normalize)
    print(f"wrote {info['dir']}: model.onnx {info['model_bytes']} B, model.onnx.data {info['data_bytes']} B, "
          f"{info['initializers']} initializers")
    print("ops: " + ", ".join(f"{k} {v}" for k, v in info["ops"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
