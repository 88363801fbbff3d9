#!/usr/bin/env python3
"""A Qwen3.5 package with an MTP head, made by onnxruntime-genai 0.18's own model builder.

The builder writes mtp.onnx (one full-attention decoder layer fed the main model's final
hidden state and the next token, builders/qwen.py Qwen35MTPModel) beside model.onnx, adds
a `hidden_states` output to the decoder and an `mtp` block to genai_config.json, when the
checkpoint's text config has mtp_num_hidden_layers > 0 and its safetensors hold `mtp.*`
weights (transformers drops them on load, so the builder reads them from the files).

Here: the tiny Qwen3.5 text configuration of tools/builder_packages.py (hidden 128, three
linear-attention layers and one full-attention layer, vocab 512) initialised by
transformers after torch.manual_seed(1234) (--init normal: every matrix then redrawn from
normal(0, 0.08)), and the MTP weights in mtp.safetensors beside model.safetensors: a
decoder layer as transformers makes it, fc [hidden, 2 hidden] and the three norms (the
(1 + weight) convention), drawn at random (--head random: its drafts are almost never
kept) or (--head echo, the default) with fc passing the main model's hidden state, the
norms at zero and the layer's output projections small, so that the head mostly drafts
the token it is given again (kept wherever the model repeats one) while its attention
still decides some drafts. Then

    python -m onnxruntime_genai.models.builder -i HF -o OUT -p fp32 -e cpu

and, for onnxruntime-genai's og.MtpGenerator (which opens the head as a model of its own),
OUT/ort: the same files linked, genai_config.json without the builder's
shared_initializers lists (onnxruntime-genai 0.18 refuses its own builder's lists on the
CPU: "GetMemoryInfo for CPU should not be used"; the graphs read the shared tensors from
model.onnx.data anyway), the decoder's logits cast to float16 at the end of its graph
(fp16_logits), and OUT/ort/head: a genai_config.json whose decoder is the package's mtp
block (its hidden_states input named).

Usage: mtp_package.py WORK [--init transformers|normal] [--head echo|random] [--force]
(prints OUT; exits 77 without torch, transformers or onnxruntime-genai)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SEED = 1234
VOCAB = 512
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_hf(hf_dir, init, head):
    import torch
    import transformers as tf
    from safetensors.torch import save_file
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import builder_packages as bp

    torch.manual_seed(SEED)
    text = bp.qwen3_5_text_args()
    cfg = tf.Qwen3_5Config(text_config=text, vision_config=bp.qwen3_5_vision_args(),
                           tie_word_embeddings=False)
    cfg.architectures = ["Qwen3_5ForConditionalGeneration"]
    model = tf.Qwen3_5ForConditionalGeneration(cfg)
    if init == "normal":
        with torch.no_grad():
            for _, p in model.named_parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.08)
    shutil.rmtree(hf_dir, ignore_errors=True)
    os.makedirs(hf_dir)
    model.save_pretrained(hf_dir)
    bp.tokenizer_files(hf_dir)

    # the MTP head's weights, as a Qwen3.5 checkpoint names them
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer
    lc = tf.Qwen3_5TextConfig(**{**text, "num_hidden_layers": 1,
                                  "layer_types": ["full_attention"]})
    layer = Qwen3_5DecoderLayer(lc, layer_idx=0)
    H = text["hidden_size"]
    state = {}
    with torch.no_grad():
        for k, v in layer.state_dict().items():
            w = torch.empty_like(v)
            w.normal_(0.0, 0.08 if v.dim() >= 2 else 0.1)
            state["mtp.layers.0." + k] = w.contiguous()
        state["mtp.fc.weight"] = torch.empty(H, 2 * H).normal_(0.0, 0.08)
        for n in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
            state[f"mtp.{n}.weight"] = torch.empty(H).normal_(0.0, 0.1)
        if head == "echo":
            # fc passes the hidden half and the layer adds little (its output projections
            # drawn from normal(0, 0.02)): the head's logits are close to lm_head(norm(h)),
            # the main model's own choice at the position before, so it mostly drafts the
            # token it is given again (kept wherever the model repeats a token), and its
            # attention over what it holds still decides some drafts
            for k in state:
                if k.endswith(("o_proj.weight", "down_proj.weight")):
                    state[k].normal_(0.0, 0.02)
            state["mtp.fc.weight"] = torch.cat([torch.zeros(H, H), torch.eye(H)], dim=1)
            for n in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
                state[f"mtp.{n}.weight"].zero_()
    save_file(state, os.path.join(hf_dir, "mtp.safetensors"))

    path = os.path.join(hf_dir, "config.json")
    with open(path) as f:
        c = json.load(f)
    c["text_config"]["mtp_num_hidden_layers"] = 1
    with open(path, "w") as f:
        json.dump(c, f, indent=2)


def link_files(src, dst):
    os.makedirs(dst)
    for f in os.listdir(src):
        if os.path.isfile(os.path.join(src, f)) and f != "genai_config.json":
            os.link(os.path.join(src, f), os.path.join(dst, f))


def fp16_logits(path):
    """The decoder's logits output cast to float16 at its end (a new graph file; the
    weights stay in the linked model.onnx.data): og.MtpGenerator argmaxes float32 logits on
    the CPU through a Cast to float32 that onnxruntime refuses for float32 input ("Cast -
    input and output types are the same"), so it runs on the CPU only with float16 logits."""
    import onnx
    from onnx import TensorProto, helper
    m = onnx.load(path, load_external_data=False)
    out = next(o for o in m.graph.output if o.name == "logits")
    for n in m.graph.node:
        n.output[:] = ["logits_fp32" if x == "logits" else x for x in n.output]
    m.graph.node.append(helper.make_node("Cast", ["logits_fp32"], ["logits"],
                                         name="/logits/CastToFloat16", to=TensorProto.FLOAT16))
    out.type.tensor_type.elem_type = TensorProto.FLOAT16
    os.unlink(path)  # a link to the package's file: write a file of its own
    onnx.save(m, path)


def ort_packages(out):
    """OUT/ort (the package for onnxruntime-genai) and OUT/ort/head (the mtp block as the
    decoder of a package of its own: og.MtpGenerator's second model)."""
    with open(os.path.join(out, "genai_config.json")) as f:
        cfg = json.load(f)
    cfg["model"]["decoder"].pop("shared_initializers", None)
    cfg["model"]["mtp"].pop("shared_initializers", None)
    ort = os.path.join(out, "ort")
    shutil.rmtree(ort, ignore_errors=True)
    link_files(out, ort)
    with open(os.path.join(ort, "genai_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    fp16_logits(os.path.join(ort, "model.onnx"))
    mtp = dict(cfg["model"]["mtp"])
    head = os.path.join(ort, "head")
    link_files(out, head)
    dec = dict(cfg["model"]["decoder"])
    dec["filename"] = mtp["filename"]
    dec["num_hidden_layers"] = mtp["num_hidden_layers"]
    dec["num_key_value_heads"] = mtp["num_key_value_heads"]
    dec["head_size"] = mtp["head_size"]
    dec["inputs"] = mtp["inputs"]
    dec["outputs"] = mtp["outputs"]
    cfg["model"]["decoder"] = dec
    cfg["model"].pop("mtp")
    with open(os.path.join(head, "genai_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--init", choices=("transformers", "normal"), default="transformers")
    ap.add_argument("--head", choices=("random", "echo"), default="echo")
    a = ap.parse_args()
    try:
        import onnx_ir  # noqa: F401  (the builder's)
        import onnxruntime_genai  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as ex:
        print(f"mtp_package: needs torch, transformers, onnx_ir and onnxruntime-genai ({ex})",
              file=sys.stderr)
        sys.exit(77)
    name = f"qwen3_5_mtp-{a.init}-{a.head}"
    hf = os.path.join(a.work, "hf", name)
    out = os.path.join(a.work, name + "-fp32")
    if os.path.isfile(os.path.join(out, "ort", "head", "genai_config.json")) and not a.force:
        print(out)
        return
    make_hf(hf, a.init, a.head)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", out,
           "-p", "fp32", "-e", "cpu", "-c", os.path.join(a.work, "cache")]
    log = out + ".log"
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not os.path.isfile(os.path.join(out, "mtp.onnx")):
        sys.exit(f"mtp_package: the builder made no MTP package (see {log})")
    ort_packages(out)
    print(out)


if __name__ == "__main__":
    main()
