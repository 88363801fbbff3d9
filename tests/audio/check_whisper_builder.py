#!/usr/bin/env python3
"""A Whisper package from onnxruntime-genai's model builder, run graph by graph through
onnx_genai.InferenceSession (the native backend) against PyTorch's
WhisperForConditionalGeneration from transformers.

A random-initialised whisper-tiny-like model (2 + 2 layers, d_model 64, 4 heads, the
real vocabulary size) is saved and turned into a package by
`python -m onnxruntime_genai.models.builder` (fp32, cpu): encoder.onnx (Conv, Gelu,
com.microsoft Attention, SkipLayerNormalization; outputs the hidden states and every
decoder layer's cross-attention keys and values) and decoder.onnx (com.microsoft
MultiHeadAttention over a self-attention cache and the cross keys/values). The features of
a generated clip (og.Audios) go through our encoder; then a greedy loop of DECODE_STEPS
through our decoder, feeding its present self cache back; at each step the logits of the
new position must equal transformers' (the whole prefix recomputed) within TOL, and the
ids must be its greedy ids.

Also reported, not asserted: whether onnxruntime runs the builder's encoder (1.31.1
crashes on it: com.microsoft Attention with no bias input), and whether og.Model opens the
package (it does since the encoder-decoder pipeline, genai/encoder.c; check_whisper_generate.py
generates with it).

Needs torch, transformers, onnx_ir and onnxruntime-genai's builder: exit 77 (skip) without
them. About 30 s.
"""
import os
import subprocess
import sys
import tempfile
import warnings

TOL = 1e-4          # logits and hidden states (measured: 7e-7 and 4e-7)
DECODE_STEPS = 8
PROMPT = [50258, 50259, 50359]  # <|startoftranscript|> <|en|> <|transcribe|> in whisper's vocab

try:
    import numpy as np
    import torch
    import onnx_ir  # noqa: F401  (the builder needs it)
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    import onnxruntime_genai.models.builder  # noqa: F401
except ImportError as e:
    print(f"SKIP: {e} (this check needs torch, transformers, onnx_ir and onnxruntime-genai's "
          "builder)")
    sys.exit(77)
warnings.filterwarnings("ignore")

import onnx_genai as og  # noqa: E402

LAYERS, HEADS, DIM = 2, 4, 64


def make_package(tmp, prepare=None, **config):
    """A random-initialised model (seed 26; WhisperConfig keys in config override ours) and
    the builder's package of it (also check_whisper_generate.py's); prepare(model), when
    given, changes the weights before the export."""
    torch.manual_seed(26)
    cfg = WhisperConfig(vocab_size=51865, d_model=DIM, encoder_layers=LAYERS,
                        decoder_layers=LAYERS, encoder_attention_heads=HEADS,
                        decoder_attention_heads=HEADS, encoder_ffn_dim=2 * DIM,
                        decoder_ffn_dim=2 * DIM, num_mel_bins=80, **config)
    model = WhisperForConditionalGeneration(cfg).eval()
    if prepare:
        prepare(model)
    hf = os.path.join(tmp, "hf")
    model.save_pretrained(hf)
    pkg = os.path.join(tmp, "pkg")
    r = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", hf,
                        "-i", hf, "-o", pkg, "-p", "fp32", "-e", "cpu",
                        "-c", os.path.join(tmp, "cache")], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
        raise SystemExit("FAIL: the builder failed")
    return model, pkg


def clip(tmp, name="clip.wav", seconds=3.0, freq=440, seed=0):
    """A 16 kHz 16-bit WAV: a tone with a little noise."""
    import wave
    sr = 16000
    t = np.arange(int(seconds * sr)) / sr
    x = 0.3 * np.sin(2 * np.pi * freq * t) + 0.05 * np.random.default_rng(seed).standard_normal(
        len(t))
    path = os.path.join(tmp, name)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(np.round(x * 32767).astype("<i2").tobytes())
    return path


def ort_encoder_status(pkg, feats_path):
    """Whether onnxruntime runs the builder's encoder, in a child process (it may crash)."""
    code = ("import numpy as np, onnxruntime as ort, sys\n"
            f"s = ort.InferenceSession({os.path.join(pkg, 'encoder.onnx')!r}, "
            "providers=['CPUExecutionProvider'])\n"
            f"s.run(None, {{'audio_features': np.load({feats_path!r})}})\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode == 0:
        return "runs it"
    if r.returncode < 0:
        return f"crashes (signal {-r.returncode})"
    return f"fails: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model, pkg = make_package(tmp)
        feats = og.Audios.open(clip(tmp)).input_features().as_numpy()
        opts = og.SessionOptions()
        opts.backend = "native"
        enc = og.InferenceSession(os.path.join(pkg, "encoder.onnx"), opts)
        enc_out = dict(zip([o.name for o in enc.get_outputs()],
                           enc.run(None, {"audio_features": feats})))
        with torch.no_grad():
            f = torch.from_numpy(feats)
            hidden = model.model.encoder(f).last_hidden_state
            d = float(np.abs(enc_out["hidden_states"] - hidden.numpy()).max())
            worst_kv = 0.0
            for i, layer in enumerate(model.model.decoder.layers):
                attn = layer.encoder_attn
                for proj, name in ((attn.k_proj, "key"), (attn.v_proj, "value")):
                    want = proj(hidden).view(1, -1, HEADS, DIM // HEADS).transpose(1, 2).numpy()
                    got = enc_out[f"present_{name}_cross_{i}"]
                    worst_kv = max(worst_kv, float(np.abs(got - want).max()))
        print(f"encoder: hidden states max |ours - torch| {d:.3g}, cross keys/values "
              f"{worst_kv:.3g}")
        if d > TOL or worst_kv > TOL:
            failures.append(f"encoder outputs differ from torch by {max(d, worst_kv):.3g}")

        dec = og.InferenceSession(os.path.join(pkg, "decoder.onnx"), opts)
        names = [o.name for o in dec.get_outputs()]
        head = DIM // HEADS
        feed = {"input_ids": np.array([PROMPT], np.int32)}
        for i in range(LAYERS):
            feed[f"past_key_self_{i}"] = np.zeros((1, HEADS, 0, head), np.float32)
            feed[f"past_value_self_{i}"] = np.zeros((1, HEADS, 0, head), np.float32)
            feed[f"past_key_cross_{i}"] = enc_out[f"present_key_cross_{i}"]
            feed[f"past_value_cross_{i}"] = enc_out[f"present_value_cross_{i}"]
        ours, theirs, worst = list(PROMPT), list(PROMPT), 0.0
        for step in range(DECODE_STEPS):
            out = dict(zip(names, dec.run(None, feed)))
            with torch.no_grad():
                want = model(input_features=f,
                             decoder_input_ids=torch.tensor([ours])).logits[0, -1].numpy()
            worst = max(worst, float(np.abs(out["logits"][0, -1] - want).max()))
            ours.append(int(out["logits"][0, -1].argmax()))
            theirs.append(int(want.argmax()))
            feed["input_ids"] = np.array([[ours[-1]]], np.int32)
            for i in range(LAYERS):
                feed[f"past_key_self_{i}"] = out[f"present_key_self_{i}"]
                feed[f"past_value_self_{i}"] = out[f"present_value_self_{i}"]
        print(f"decoder: {DECODE_STEPS} greedy steps with the self cache, logits max |ours - "
              f"torch| {worst:.3g}; ids {ours[len(PROMPT):]} (torch {theirs[len(PROMPT):]})")
        if worst > TOL or ours != theirs:
            failures.append(f"decoder: logits {worst:.3g} apart, ids {ours} vs {theirs}")

        feats_path = os.path.join(tmp, "feats.npy")
        np.save(feats_path, feats)
        print(f"onnxruntime on the builder's encoder: {ort_encoder_status(pkg, feats_path)}")
        try:
            og.Model(pkg)
            print("og.Model opened the whisper package")
        except og.OgError as e:
            print(f"og.Model: {e}")
            if "whisper" not in str(e):
                failures.append(f"og.Model's refusal does not name the type: {e}")
    for msg in failures:
        print("FAIL:", msg)
    if failures:
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
