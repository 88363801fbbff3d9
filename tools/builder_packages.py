#!/usr/bin/env python3
"""Packages made by onnxruntime-genai's own model builder from tiny random-initialised
Hugging Face models, for parity checks against packages we did not make ourselves.

For each NAME (MODELS below) it writes a Hugging Face checkpoint (transformers, a fixed
seed, a BPE tokenizer over made-up tokens) to WORK/hf/NAME and runs

    python -m onnxruntime_genai.models.builder -i WORK/hf/NAME -o WORK/NAME-PREC \\
        -p PREC -e cpu -c WORK/cache --extra_options [accuracy_level=L block_size=B]

(the builder's own defaults on the CPU for int4 are accuracy_level 4 and block 32).

The models: one tiny configuration per architecture the builder exports as a text model
(hidden 128, 2 or 4 layers, 4 heads over 2 KV heads, head_dim 32, vocab 512, and what the
architecture needs besides: sliding windows, partial rotary, experts, linear attention,
conv layers): llama, mistral, qwen2 (and qwen2_tied, as Qwen2.5-0.5B), qwen3, phi, phi3,
phi3_longrope, phimoe, phi3small, gemma, gemma2, gemma3, gemma4_text (the builder's
Gemma4ForConditionalGeneration, text only), granite, granitemoehybrid (attention layers
and the shared MLP, no experts), olmo, smollm3, ernie4_5, nemotron, chatglm, internlm2,
hunyuan, gpt-oss, lfm2 (conv, conv, attention, conv; tied), qwen3_5_text (the builder on
Qwen3_5ForConditionalGeneration: the text decoder), qwen3_5_tied, qwen3_5_moe_text, and
qwen3_5_split / qwen3_5_moe_split: the same checkpoints with exclude_embeds=true, the
builder's only split export (model.type qwen3_5 / qwen3_5_moe, a decoder fed inputs_embeds;
it writes no embedding or vision model). The names qwen3_5 and qwen3_5_moe are the _text
ones. Weights (--init): as transformers initialises the model after torch.manual_seed
('transformers', the default), or every matrix redrawn from normal(0, 0.08) ('normal':
larger logits, fewer near-ties).

With tied embeddings the builder quantizes the shared table once: lm_head is a
MatMulNBits and the embedding a GatherBlockQuantized of the same int4 weights.

Usage: builder_packages.py WORK [--names lfm2,qwen3_5,...] [--init transformers|normal]
                                [--precision int4] [--accuracy-level 4] [--block-size 32]
                                [--force] [--check ONNX_GENAI [--steps N]]
       builder_packages.py WORK --matrix --check ONNX_GENAI [--names ...] [--init ...]
                                [--precisions fp32,fp16,bf16,int4-l1,int4-l4] [--force]
       builder_packages.py WORK --summary [--names ...] [--init ...] [--precisions ...]
Prints each package's folder. With --check, runs `ONNX_GENAI parity` on each package for
a few prompts (greedy, N generated steps, default 6: the prompt's step and N - 1 decode
steps) and fails when any of them diverges: other tokens, or logits out of parity's
tolerance (issue 20: at accuracy_level 4 the tied-embedding packages diverged from the
prompt's step on, through the first norm's bits). Later steps are not held to it: at
accuracy_level 4 MatMulNBits' float sums still differ from onnxruntime's in the last
bits (its kernels' summation order), and on random weights an int8 rounding decided
differently now and then grows into other tokens after some steps.

--matrix builds every (name, precision) and runs tests/parity/check_matrix.py's
per-package comparison (compare_package: parity --through-ties over 64 tokens, batch 1 and
an equal-length batch of 2 against onnxruntime-genai, a batch of different lengths
against its single runs, the serving engine) on each, with its drift rule (a level-4
failure only against onnxruntime, whose level-1 twin passes, is drift); one result per
package under WORK/results-builder, and the table (name x precision: '=', '=~N',
'drift', 'FAIL', 'builder error: ...', 'HF error: ...') with the notes of each failure
in WORK/builder_matrix.md (builder_matrix-normal.md for --init normal). A package the
builder or transformers cannot make is a row with its error, and so is a graph
onnxruntime refuses to load, or a decoder with no embedding to feed it (the split
export). Where onnxruntime-genai loads a package but cannot run it (the builder's CPU
fp16 and bf16 packages: a Cast in repeat_kv, no bfloat16 Where kernel) there is no
oracle: the cell is 'no oracle (ORT error); ours: =' (or FAIL) after the checks among
our own paths only (batch rows against single runs, the engine). Packages and failed
builds (their logs) are reused unless --force; --summary only prints the table again.
Needs torch, transformers and onnxruntime-genai (its builder needs onnx_ir too); exits
77 (a skip for ctest) when they are missing.
"""
import argparse
import re
import time
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))
import check_matrix  # noqa: E402  (the per-package comparison and its table cells)
VOCAB = 512
SEED = 1234


def tokenizer_files(out_dir):
    """A BPE tokenizer without merges over VOCAB made-up tokens (each a whole word): the
    builder saves one with the package; the runs feed token ids and never use it, but
    `onnx-genai generate` loads it, and reads BPE only."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for i in range(len(vocab), VOCAB):
        vocab[f"t{i}"] = i
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>")
    fast.save_pretrained(out_dir)


def lfm2_model():
    import transformers as tf
    cfg = tf.Lfm2Config(
        vocab_size=VOCAB, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        layer_types=["conv", "conv", "full_attention", "conv"], conv_L_cache=3,
        block_multiple_of=32, block_auto_adjust_ff_dim=True, tie_word_embeddings=True,
        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    cfg.architectures = ["Lfm2ForCausalLM"]
    return tf.Lfm2ForCausalLM(cfg)


def qwen3_5_text_args():
    return dict(
        vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=512, linear_conv_kernel_dim=4, linear_key_head_dim=32,
        linear_value_head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"],
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def qwen3_5_vision_args():
    return dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16,
                spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=128,
                num_position_embeddings=64)


def qwen3_5_model(tie=False):
    import transformers as tf
    text = qwen3_5_text_args()
    text["tie_word_embeddings"] = tie
    cfg = tf.Qwen3_5Config(text_config=text, vision_config=qwen3_5_vision_args(),
                           tie_word_embeddings=tie)
    cfg.architectures = ["Qwen3_5ForConditionalGeneration"]
    return tf.Qwen3_5ForConditionalGeneration(cfg)


def qwen3_5_moe_model():
    import transformers as tf
    text = qwen3_5_text_args()
    text.pop("intermediate_size")
    text.update(moe_intermediate_size=64, shared_expert_intermediate_size=64,
                num_experts=4, num_experts_per_tok=2)
    cfg = tf.Qwen3_5MoeConfig(text_config=text, vision_config=qwen3_5_vision_args(),
                              tie_word_embeddings=False)
    cfg.architectures = ["Qwen3_5MoeForConditionalGeneration"]
    return tf.Qwen3_5MoeForConditionalGeneration(cfg)


def qwen2_model(tie=False):
    import transformers as tf
    cfg = tf.Qwen2Config(vocab_size=VOCAB, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, tie_word_embeddings=tie,
                         bos_token_id=1, eos_token_id=2)
    cfg.architectures = ["Qwen2ForCausalLM"]
    return tf.Qwen2ForCausalLM(cfg)


def llama_model():
    import transformers as tf
    cfg = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, bos_token_id=1, eos_token_id=2)
    cfg.architectures = ["LlamaForCausalLM"]
    return tf.LlamaForCausalLM(cfg)


def causal(cfg_name, model_name, arch=None, **kw):
    """A *ForCausalLM of transformers' class model_name on config class cfg_name: the
    shared tiny shape (hidden 128, 2 layers, 4 heads over 2 KV heads, head_dim 32, vocab
    VOCAB) updated with kw."""
    import transformers as tf
    args = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                tie_word_embeddings=False)
    args.update(kw)
    args = {k: v for k, v in args.items() if v is not None}
    for cls in (cfg_name, model_name):
        if not hasattr(tf, cls):
            raise RuntimeError(f"transformers {tf.__version__} has no {cls} (the checkpoints "
                               f"of this type come with remote code only)")
    cfg = getattr(tf, cfg_name)(**args)
    cfg.architectures = [model_name]
    model = getattr(tf, model_name)(cfg)
    if arch:  # the name the checkpoints use (save_pretrained writes the class's)
        model.builder_architecture = arch
    return model


SLIDING4 = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]


def gemma4_model(moe=False):
    """Gemma 4's text decoder: the builder reads Gemma4UnifiedForConditionalGeneration
    (the dense checkpoints) and Gemma4ForConditionalGeneration (the MoE ones), both as
    model.type gemma4_text; sliding layers of head_dim 32, full ones of 64."""
    import transformers as tf
    text = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=32, global_head_dim=64,
                max_position_embeddings=512, sliding_window=8, layer_types=SLIDING4,
                final_logit_softcapping=30.0, pad_token_id=0, bos_token_id=1,
                eos_token_id=2, tie_word_embeddings=True)
    if moe:
        text.update(vocab_size_per_layer_input=VOCAB, hidden_size_per_layer_input=0,
                    enable_moe_block=True, num_experts=4, top_k_experts=2,
                    moe_intermediate_size=64)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, head_dim=16)
    ids = dict(boi_token_id=VOCAB - 8, eoi_token_id=VOCAB - 7, image_token_id=VOCAB - 6,
               video_token_id=VOCAB - 5, boa_token_id=VOCAB - 4, eoa_token_index=VOCAB - 3,
               audio_token_id=VOCAB - 2)
    name = "Gemma4" if moe else "Gemma4Unified"
    cfg = getattr(tf, name + "Config")(text_config=text, vision_config=vision,
                                       audio_config=None, tie_word_embeddings=True, **ids)
    cfg.architectures = [name + "ForConditionalGeneration"]
    return getattr(tf, name + "ForConditionalGeneration")(cfg)


_GRANITE = dict(embedding_multiplier=12.0, attention_multiplier=0.015625,
                residual_multiplier=0.22, logits_scaling=8.0)

# name: (the builder's model type it should write, a maker of the model, extra options for
# the builder). The split packages are the builder's exclude_embeds export of the
# vision-language checkpoint (the decoder fed inputs_embeds, model.type qwen3_5 /
# qwen3_5_moe).
MODELS = {
    "llama": ("llama", llama_model),
    "mistral": ("mistral", lambda: causal("MistralConfig", "MistralForCausalLM",
                                          sliding_window=None)),
    "qwen2": ("qwen2", qwen2_model),
    "qwen2_tied": ("qwen2", lambda: qwen2_model(tie=True)),
    "qwen3": ("qwen3", lambda: causal("Qwen3Config", "Qwen3ForCausalLM")),
    "phi": ("phi", lambda: causal("PhiConfig", "PhiForCausalLM", num_key_value_heads=4,
                                  head_dim=None, partial_rotary_factor=0.5)),
    "phi3": ("phi3", lambda: causal("Phi3Config", "Phi3ForCausalLM", head_dim=None,
                                    original_max_position_embeddings=512)),
    "phi3_longrope": ("phi3", lambda: causal(
        "Phi3Config", "Phi3ForCausalLM", head_dim=None, original_max_position_embeddings=128,
        rope_parameters={"rope_type": "longrope", "type": "longrope", "rope_theta": 10000.0,
                         "short_factor": [1.0 + 0.01 * i for i in range(16)],
                         "long_factor": [1.0 + 0.2 * i for i in range(16)],
                         "original_max_position_embeddings": 128})),
    "phimoe": ("phimoe", lambda: causal(
        "PhimoeConfig", "PhimoeForCausalLM", arch="PhiMoEForCausalLM", head_dim=None,
        num_local_experts=4, num_experts_per_tok=2, original_max_position_embeddings=128,
        rope_parameters={"rope_type": "longrope", "type": "longrope", "rope_theta": 10000.0,
                         "short_factor": [1.0] * 16, "long_factor": [1.5] * 16,
                         "original_max_position_embeddings": 128,
                         "short_mscale": 1.0, "long_mscale": 1.1})),
    "phi3small": ("phi3small", lambda: causal("Phi3SmallConfig", "Phi3SmallForCausalLM")),
    "gemma": ("gemma", lambda: causal("GemmaConfig", "GemmaForCausalLM",
                                      hidden_activation="gelu_pytorch_tanh")),
    "gemma2": ("gemma2", lambda: causal("Gemma2Config", "Gemma2ForCausalLM", num_hidden_layers=4,
                                        sliding_window=8, layer_types=SLIDING4,
                                        query_pre_attn_scalar=32, tie_word_embeddings=True)),
    "gemma3": ("gemma3_text", lambda: causal(
        "Gemma3TextConfig", "Gemma3ForCausalLM", num_hidden_layers=4, sliding_window=8,
        layer_types=SLIDING4, query_pre_attn_scalar=32, tie_word_embeddings=True)),
    "gemma4_text": ("gemma4_text", gemma4_model),
    "gemma4_text_moe": ("gemma4_text", lambda: gemma4_model(moe=True)),
    "granite": ("granite", lambda: causal("GraniteConfig", "GraniteForCausalLM", head_dim=None,
                                          **_GRANITE)),
    "granitemoehybrid": ("granitemoehybrid", lambda: causal(
        "GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", head_dim=None,
        layer_types=["attention", "attention"], num_local_experts=0,
        shared_intermediate_size=256, position_embedding_type="rope", **_GRANITE)),
    "olmo": ("olmo", lambda: causal("OlmoConfig", "OlmoForCausalLM", head_dim=None)),
    "smollm3": ("smollm3", lambda: causal("SmolLM3Config", "SmolLM3ForCausalLM",
                                          num_hidden_layers=4, no_rope_layer_interval=4,
                                          head_dim=None, tie_word_embeddings=True)),
    "ernie4_5": ("ernie4_5", lambda: causal("Ernie4_5Config", "Ernie4_5ForCausalLM",
                                            tie_word_embeddings=True)),
    "nemotron": ("nemotron", lambda: causal("NemotronConfig", "NemotronForCausalLM",
                                            partial_rotary_factor=0.5)),
    "chatglm": ("chatglm", lambda: causal("ChatGLMConfig", "ChatGLMForConditionalGeneration")),
    "internlm2": ("internlm2", lambda: causal("InternLM2Config", "InternLM2ForCausalLM")),
    "hunyuan": ("hunyuandensev1", lambda: causal("HunYuanDenseV1Config",
                                                 "HunYuanDenseV1ForCausalLM")),
    "gpt-oss": ("gptoss", lambda: causal(
        "GptOssConfig", "GptOssForCausalLM", intermediate_size=128, num_local_experts=4,
        num_experts_per_tok=2, sliding_window=8, layer_types=["sliding_attention",
                                                              "full_attention"])),
    "lfm2": ("lfm2", lfm2_model),
    "qwen3_5_text": ("qwen3_5_text", qwen3_5_model),
    "qwen3_5_tied": ("qwen3_5_text", lambda: qwen3_5_model(tie=True)),
    "qwen3_5_moe_text": ("qwen3_5_moe_text", qwen3_5_moe_model),
    "qwen3_5_split": ("qwen3_5", qwen3_5_model, ["exclude_embeds=true"]),
    "qwen3_5_moe_split": ("qwen3_5_moe", qwen3_5_moe_model, ["exclude_embeds=true"]),
}
# the names before the matrix: the old ones
ALIASES = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}
HF_OF = {"qwen3_5_split": "qwen3_5_text", "qwen3_5_moe_split": "qwen3_5_moe_text"}


INITS = ("transformers", "normal")


def extra_options(name):
    return MODELS[name][2] if len(MODELS[name]) > 2 else ()


def hf_name(name, init):
    return HF_OF.get(name, name) + ("" if init == "transformers" else f"-{init}")


def make_hf(name, hf_dir, force, init="transformers"):
    """The checkpoint in hf_dir: the model as transformers initialises it after
    torch.manual_seed(SEED) ('transformers'), or with every matrix then redrawn from
    normal(0, 0.08) ('normal': the default init of 0.02 makes the logits nearly equal,
    and near-ties decide more tokens)."""
    mark = os.path.join(hf_dir, "init.txt")
    if os.path.exists(os.path.join(hf_dir, "config.json")) and not force and \
            os.path.exists(mark) and open(mark).read().strip() == init:
        return
    import torch
    torch.manual_seed(SEED)
    model = MODELS[name][1]()
    if init == "normal":
        with torch.no_grad():
            for _, p in model.named_parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.08)
    shutil.rmtree(hf_dir, ignore_errors=True)
    os.makedirs(hf_dir, exist_ok=True)
    model.save_pretrained(hf_dir)
    if getattr(model, "builder_architecture", None):
        path = os.path.join(hf_dir, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg["architectures"] = [model.builder_architecture]
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
    tokenizer_files(hf_dir)
    with open(mark, "w") as f:
        f.write(init + "\n")


def builder_error(log):
    """The builder's error in its log: the exception's line, else the last line."""
    with open(log, errors="replace") as f:
        lines = [ln.strip() for ln in f.read().replace("\r", "\n").splitlines() if ln.strip()]
    exc = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Exit)\b", ln)]
    line = (exc or lines or ["(no output)"])[-1]
    return re.sub(r"^[\w.]+\.(\w+(Error|Exception))", r"\1", line)  # no module path


def build(hf_dir, out_dir, cache_dir, precision, level, block, force, extra=()):
    """Runs the builder; returns None, or its error (the package is not made)."""
    log = out_dir + ".log"
    if os.path.exists(os.path.join(out_dir, "genai_config.json")) and not force:
        return None
    if os.path.exists(log) and not force and not os.path.exists(out_dir):
        return builder_error(log)  # it failed before on the same checkpoint
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf_dir,
           "-o", out_dir, "-p", precision, "-e", "cpu", "-c", cache_dir]
    extra = list(extra)
    if precision in ("int4", "int8"):
        if level is not None:
            extra.append(f"accuracy_level={level}")
        if block is not None:
            extra.append(f"block_size={block}")
    if extra:
        cmd += ["--extra_options"] + extra
    print("+", " ".join(cmd), file=sys.stderr)
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not os.path.exists(os.path.join(out_dir, "genai_config.json")):
        shutil.rmtree(out_dir, ignore_errors=True)
        return builder_error(log)
    return None


def package_dir(work, name, init, tag):
    return os.path.join(work, f"{name}{'' if init == 'transformers' else '-' + init}-{tag}")


PROMPTS = ["1,5,6,7,8,9", "3,100,200,300", "7,7,7,7,7,7,7,7,7,7", "42",
           "11,22,33,44,55,66,77,88,99,111,222,333"]


def check(binary, pkg, steps):
    """`parity` on pkg for each prompt; returns the failures as text."""
    bad = []
    for ids in PROMPTS:
        n = len(ids.split(","))
        r = subprocess.run([binary, "parity", pkg, "--ids", ids, "--max-length", str(n + steps)],
                           capture_output=True, text=True)
        last = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"  {os.path.basename(pkg)} --ids {ids}: {last}")
        if r.returncode != 0:
            bad.append(f"{os.path.basename(pkg)} --ids {ids}: {last}")
    return bad


# The matrix's precisions: the builder's -p, and the accuracy level for int4 (block 32).
MATRIX_PRECISIONS = {"fp32": ("fp32", None), "fp16": ("fp16", None), "bf16": ("bf16", None),
                     "int4-l1": ("int4", 1), "int4-l4": ("int4", 4)}


def tag_of(precision, level, block):
    return precision if precision not in ("int4", "int8") else f"{precision}-l{level}-b{block}"


def matrix(work, names, precs, init, binary, force):
    """Builds each (name, precision) and runs check_matrix's per-package comparison on it;
    one result per package in WORK/results-builder/."""
    build_dir = os.path.dirname(os.path.abspath(binary))
    rdir = os.path.join(work, "results-builder")
    os.makedirs(rdir, exist_ok=True)
    for name in names:
        hf_dir = os.path.join(work, "hf", hf_name(name, init))
        hf_err = None
        try:
            make_hf(name, hf_dir, force, init)
        except Exception as ex:  # noqa: BLE001  (a class or config transformers refuses)
            hf_err = f"{type(ex).__name__}: {str(ex).strip().splitlines()[0] if str(ex).strip() else ''}"
        level1 = None
        for prec in precs:
            t0 = time.time()
            p, level = MATRIX_PRECISIONS[prec]
            res = {"type": name, "init": init, "precision": prec, "failures": [], "ties": 0,
                   "against_ort": []}
            d = package_dir(work, name, init, tag_of(p, level, 32))
            err = None if hf_err else build(hf_dir, d, os.path.join(work, "cache"), p, level,
                                            32, force, extra_options(name))
            if hf_err:
                res["error"] = f"HF error: {hf_err}"
            elif err:
                res["error"] = f"builder error: {err}"
            else:
                with open(os.path.join(d, "genai_config.json")) as f:
                    model = json.load(f)["model"]
                res["model_type"] = model["type"]
                if "embedding" not in model and "inputs_embeds" in \
                        model["decoder"].get("inputs", {}):
                    res["error"] = decoder_only(binary, d)
                else:
                    try:
                        ort_err = ort_cannot_run(d)
                        if ort_err and "Invalid model" in ort_err:
                            # onnxruntime refuses the graph itself: the builder wrote it
                            res["error"] = "builder error: invalid graph: " + \
                                ort_err.split("failed:", 1)[-1].replace("Invalid model. ", "")
                        elif ort_err:
                            res["ort_error"] = ort_err
                            check_matrix.own_paths(build_dir, d, res)
                        else:
                            check_matrix.compare_package(build_dir, d, res)
                    except Exception as ex:  # noqa: BLE001  (a crash or a refusal fails it)
                        res["failures"].append(f"error: {ex}")
            if prec == "int4-l1":
                level1 = res
            if check_matrix.drift(res, level1):
                res["drift"], res["failures"] = res["failures"], []
            res["seconds"] = round(time.time() - t0, 1)
            with open(os.path.join(rdir, f"{name}-{init}-{prec}.json"), "w") as f:
                json.dump(res, f)
            print(f"{name} {prec}: {cell(res)} ({res['seconds']} s)", flush=True)
            for x in res["failures"] + res.get("drift", []):
                print(f"     {x}", flush=True)
            if res.get("error"):
                print(f"     {res['error']}", flush=True)


def ort_cannot_run(d):
    """onnxruntime-genai's error where it cannot run the package at all (then there is no
    oracle: the builder's CPU fp16 and bf16 packages), else None."""
    try:
        check_matrix.check_types.theirs(d, [check_matrix.P], len(check_matrix.P) + 2)
        return None
    except Exception as ex:  # noqa: BLE001
        return str(ex).strip().splitlines()[0][:300]



def decoder_only(binary, d):
    """A package whose decoder takes inputs_embeds with nothing to make them (the builder's
    exclude_embeds export of a vision-language model writes no embedding or vision model):
    neither runtime can run it from token ids; what each says."""
    r = subprocess.run([binary, "parity", d, "--ids", "1,5,6", "--max-length", "5"],
                       capture_output=True, text=True)
    ours = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["(ran)"]
    try:
        import numpy as np
        import onnxruntime_genai as og
        cfg = og.Config(d)
        cfg.clear_providers()
        m = og.Model(cfg)
        params = og.GeneratorParams(m)
        params.set_search_options(max_length=5)
        g = og.Generator(m, params)
        g.append_tokens(np.array([[1, 5, 6]], dtype=np.int32))
        g.generate_next_token()
        theirs = "(ran)"
    except Exception as ex:  # noqa: BLE001
        theirs = str(ex).strip().splitlines()[0]
    return (f"builder error: decoder only (inputs_embeds), no embedding or vision model; "
            f"onnx-genai: {ours[0]}; onnxruntime-genai: {theirs}")


def cell(res):
    """check_matrix's cell, or the error of a package that was not made, or 'no oracle'."""
    if res and res.get("error"):
        e = res["error"].split("; ")[0].split(". ")[0].replace("|", "\\|")
        return e if len(e) <= 140 else e[:137] + "..."
    if res and res.get("ort_error"):
        return "no oracle (ORT error); ours: " + ("FAIL" if res["failures"] else "=")
    return check_matrix.cell(res)


def summary(work, names, precs, init):
    """The table of WORK/results-builder for those names and precisions, into
    WORK/builder_matrix.md (builder_matrix-INIT.md for other weights)."""
    rdir = os.path.join(work, "results-builder")
    results = {}
    for name in names:
        for prec in precs:
            f = os.path.join(rdir, f"{name}-{init}-{prec}.json")
            if os.path.exists(f):
                with open(f) as fh:
                    results[(name, prec)] = json.load(fh)
    lines = ["| name | model.type | " + " | ".join(precs) + " |",
             "|---|---|" + "---|" * len(precs)]
    n, errors = {"missing": 0, "failed": 0, "drifted": 0}, 0
    for name in names:
        mtypes = {r.get("model_type") for (n, _), r in results.items() if n == name} - {None}
        mtype = ", ".join(sorted(mtypes)) or f"({MODELS[name][0]})"
        cells = []
        for prec in precs:
            r = results.get((name, prec))
            errors += bool(r and r.get("error"))
            check_matrix.tally(r, n)
            cells.append(cell(r))
        lines.append(f"| {name} | {mtype} | " + " | ".join(cells) + " |")
    legend = (f"Packages made by onnxruntime-genai's builder (-e cpu; int4 block 32) from tiny "
              f"random Hugging Face models (transformers, torch.manual_seed({SEED}), weights "
              + ("as transformers initialises them" if init == "transformers" else
                 "redrawn from normal(0, 0.08)") +
              "), each compared as tests/parity/check_matrix.py compares a package: '=': 64 "
              "greedy tokens equal onnxruntime-genai's (batch 1 and an equal-length batch of "
              "2), logits within parity's tolerance at every step, rows of a batch of "
              "different lengths equal their single runs, the engine equals the generator; "
              "'=~N': the same but at N near-ties; 'drift': at accuracy_level 4 only, against "
              "onnxruntime only, with the level-1 package passing; 'builder error' / 'HF "
              "error': the builder or transformers could not make the package (the error's "
              "line); 'no oracle (ORT error); ours: =': onnxruntime-genai cannot run the "
              "package (its error below), and our own paths agree (a batch of different "
              "lengths row by row with the single runs, the engine with the generator). "
              f"model.type: genai_config's, or (the type expected). {len(results)} "
              f"packages: {n['failed']} failed, {n['drifted']} drifted, {errors} not made, "
              f"{n['missing']} not run.")
    notes = []
    for (name, prec), r in results.items():
        if r["failures"] or r.get("drift"):
            notes.append(f"- {name} {prec}: " + "; ".join(
                r.get("drift", []) + r["failures"] +
                ([f"onnxruntime-genai cannot run it: {r['ort_error']}"] if r.get("ort_error")
                 else [])))
        elif r.get("ort_error"):
            notes.append(f"- {name} {prec}: onnxruntime-genai cannot run it: {r['ort_error']}")
        elif r.get("error") and r["error"] != cell(r):
            notes.append(f"- {name} {prec}: {r['error']}")
    text = "\n".join([check_matrix.machine(), "", "\n".join(lines), "", legend,
                      *([""] + notes if notes else [])])
    out = os.path.join(work, "builder_matrix.md" if init == "transformers" else
                       f"builder_matrix-{init}.md")
    with open(out, "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if n["failed"] or n["missing"] else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("work")
    ap.add_argument("--names", default=None)
    ap.add_argument("--init", choices=INITS, default="transformers")
    ap.add_argument("--precision", default="int4")
    ap.add_argument("--accuracy-level", type=int, default=4)
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--check", metavar="ONNX_GENAI")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--matrix", action="store_true")
    ap.add_argument("--precisions", default=",".join(MATRIX_PRECISIONS))
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    try:
        import onnx_ir  # noqa: F401  (the builder's)
        import onnxruntime_genai  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"builder_packages.py: skipped: {e} (pip install torch transformers onnx_ir "
              f"onnxruntime-genai)")
        sys.exit(77)
    work = os.path.abspath(a.work)
    names = [ALIASES.get(n, n) for n in (a.names or ",".join(MODELS)).split(",")]
    for name in names:
        if name not in MODELS:
            sys.exit(f"unknown model {name}; known: {', '.join(MODELS)}")
    if a.matrix or a.summary:
        precs = a.precisions.split(",")
        for p in precs:
            if p not in MATRIX_PRECISIONS:
                sys.exit(f"unknown precision {p}; known: {', '.join(MATRIX_PRECISIONS)}")
        if a.matrix:
            if not a.check:
                sys.exit("--matrix needs --check ONNX_GENAI")
            matrix(work, names, precs, a.init, a.check, a.force)
        sys.exit(summary(work, names, precs, a.init))
    bad = []
    for name in names:
        hf_dir = os.path.join(work, "hf", hf_name(name, a.init))
        make_hf(name, hf_dir, a.force, a.init)
        out = package_dir(work, name, a.init, tag_of(a.precision, a.accuracy_level,
                                                     a.block_size))
        err = build(hf_dir, out, os.path.join(work, "cache"), a.precision, a.accuracy_level,
                    a.block_size, a.force, extra_options(name))
        if err:
            sys.exit(f"the builder failed on {name}: {err}; see {out}.log")
        with open(os.path.join(out, "genai_config.json")) as f:
            mtype = json.load(f)["model"]["type"]
        print(f"{out}\t{mtype}", flush=True)
        if a.check:
            bad += check(a.check, out, a.steps)
    if bad:
        print(f"builder_packages.py: {len(bad)} diverged within {a.steps} steps:")
        for b in bad:
            print("  " + b)
        sys.exit(1)


if __name__ == "__main__":
    main()
