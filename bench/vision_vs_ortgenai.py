#!/usr/bin/env python3
"""Images and audio (issue 26's Speed section): onnx-genai against onnxruntime-genai on the
same package and the same inputs, in one process, the two alternating (ours then theirs,
then theirs then ours, ...), each test's median over its repetitions:

  preprocess   processor(prompt, images=Images.open(IMAGE)): decoding, resizing, patches,
               the prompt's ids (model.create_multimodal_processor(), both sides)
  encoder      the package's vision graph on the processor's pixel_values (and
               image_grid_thw / image_sizes): ours through og.InferenceSession (the native
               backend, as the generator runs it), theirs through onnxruntime's
               InferenceSession, which onnxruntime-genai runs it with; the same thread count
  ttft         a prompt with one IMAGE (448x448 by default): processor, a new generator,
               set_inputs, the first token chosen (the encoder, the prompt's prefill)
  whisper      the real-time factor on a random-weight whisper-tiny-shaped package (4 + 4
               layers, d_model 384, 6 heads, Whisper's 51,865-token vocabulary, 80 mels;
               graphs of plain ONNX ops from tests/audio/check_whisper_pipeline.py, which
               onnxruntime-genai 0.18 runs: its encoder is one projection of the mel frames,
               not Whisper's convolutions and layers) on a WAV of --audio-seconds: features,
               encoder, --whisper-steps decoded tokens; RTF = wall time / audio duration

    python3 bench/vision_vs_ortgenai.py [--package DIR] [--image FILE] [--threads 2]
                                        [--reps 5] [--steps 1] [--audio-seconds 30]
                                        [--whisper-steps 32] [--whisper DIR] [--skip TEST,...]
                                        [--json-out FILE]

--package: a vision-language package (Qwen2.5-VL / Qwen3-VL / Qwen3.5, Phi-3-vision, Gemma 3
layouts); without it a random Qwen2.5-VL-layout package of tools/make_model.py --type
qwen2_5_vl is made (tiny: it shows the script works, not real speeds; its vision graph is a
stand-in projection). --image: without it a seeded random 448x448 PNG. Ours is the Python
binding from this tree over ONNX_GENAI_LIBRARY (default build/libonnx_genai.so). Prints a
Markdown table for docs/PERFORMANCE.md and the environment; --json-out keeps the samples.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "images"))
sys.path.insert(0, os.path.join(ROOT, "tests", "audio"))
os.environ.setdefault("ONNX_GENAI_LIBRARY", os.path.join(ROOT, "build", "libonnx_genai.so"))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import onnxruntime_genai as theirs  # noqa: E402
import onnx_genai as ours  # noqa: E402

TYPES = {"float": np.float32, "float16": np.float16, "double": np.float64, "int64": np.int64,
         "int32": np.int32}


def overlay_threads(model_dir, threads, cfg):
    """Both Configs: every stage's intra_op_num_threads (inter_op 1)."""
    if threads <= 0:
        return
    with open(os.path.join(model_dir, "genai_config.json"), encoding="utf-8") as f:
        m = json.load(f)["model"]
    so = {"session_options": {"intra_op_num_threads": threads, "inter_op_num_threads": 1}}
    cfg.overlay(json.dumps({"model": {k: so for k, v in m.items()
                                      if isinstance(v, dict) and "filename" in v}}))


def open_model(mod, model_dir, threads):
    cfg = mod.Config(model_dir)
    overlay_threads(model_dir, threads, cfg)
    return mod.Model(cfg)


def alternate(reps, fns):
    """{name: [seconds]}: fns (name -> callable) run reps times, their order rotating."""
    names = list(fns)
    out = {n: [] for n in names}
    for r in range(reps):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            t0 = time.perf_counter()
            fns[n]()
            out[n].append(time.perf_counter() - t0)
    return out


def vision_info(model_dir):
    with open(os.path.join(model_dir, "genai_config.json"), encoding="utf-8") as f:
        m = json.load(f)["model"]
    v = m["vision"]
    return m["type"], os.path.join(model_dir, v["filename"]), v["inputs"], v["outputs"]


def image_prompt(model_type):
    if model_type == "phi3v":
        return "<|user|>\n<|image_1|>\nDescribe this image.<|end|>\n<|assistant|>\n"
    if model_type.startswith("gemma"):
        return "<start_of_turn>user\n<start_of_image>Describe this image.<end_of_turn>\n" \
               "<start_of_turn>model\n"
    return "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe this image." \
           "<|im_end|>\n<|im_start|>assistant\n"


def greedy_generator(mod, model, inputs, steps):
    """A greedy generator over a processor's named inputs that runs exactly `steps` tokens."""
    n = int(inputs["input_ids"].as_numpy().shape[-1])
    params = mod.GeneratorParams(model)
    params.set_search_options(max_length=n + steps, min_length=n + steps, do_sample=False)
    gen = mod.Generator(model, params)
    gen.set_inputs(inputs)
    return gen


def first_token(mod, model, proc, prompt, image, steps):
    inputs = proc(prompt, images=mod.Images.open(image))
    gen = greedy_generator(mod, model, inputs, steps)
    for _ in range(steps):
        gen.generate_next_token()
    return int(gen.get_next_tokens()[0])


def encoder_feeds(nt, inputs, graph_path):
    """The vision graph's feeds from the processor's tensors, cast to the graph's types (as
    onnxruntime-genai casts pixel_values)."""
    g = onnx.load(graph_path, load_external_data=False).graph
    types = {i.name: onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
             for i in g.input}
    feeds = {}
    for ours_name, graph_name in inputs.items():
        if graph_name in types:
            feeds[graph_name] = np.ascontiguousarray(nt[ours_name].as_numpy().astype(types[graph_name]))
    return feeds


def whisper_package(out):
    """A whisper-tiny-shaped package of plain ONNX ops (check_whisper_pipeline's writer at
    whisper-tiny's dimensions), with Whisper's tokenizer ids and the builder's
    audio_processor_config.json."""
    import check_whisper_pipeline as wp
    wp.LAYERS, wp.HEADS, wp.HS, wp.VOCAB, wp.MELS = 4, 6, 64, wp.WHISPER_VOCAB, 80
    wp.D = wp.HEADS * wp.HS
    wp.EOS = wp.EOT
    wp.write_package(out)
    wp.write_tokenizer(out)
    with open(os.path.join(out, "genai_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["model"]["context_length"] = cfg["search"]["max_length"] = 448
    with open(os.path.join(out, "genai_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
    ops = [{"operation": {"name": "audio_decoder", "type": "AudioDecoder"}},
           {"operation": {"name": "STFT", "type": "STFTNorm",
                          "attrs": {"n_fft": 400, "frame_length": 400, "hop_length": 160}}},
           {"operation": {"name": "log_mel_spectrogram", "type": "LogMelSpectrum",
                          "attrs": {"chunk_size": 30, "hop_length": 160, "n_fft": 400,
                                    "n_mel": 80}}}]
    with open(os.path.join(out, "audio_processor_config.json"), "w", encoding="utf-8") as f:
        json.dump({"feature_extraction": {"sequence": ops}}, f)


def write_wav(path, seconds):
    rng = np.random.default_rng(7)
    t = np.arange(int(16000 * seconds)) / 16000
    sig = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.round(np.clip(sig, -1, 1) * 32767).astype("<i2").tobytes())


def transcribe(mod, model, proc, wav, steps):
    prompt = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>"
    inputs = proc(prompt, audios=mod.Audios.open(wav))
    gen = greedy_generator(mod, model, inputs, steps)
    k = 0
    while not gen.is_done():
        gen.generate_next_token()
        k += 1
    return k


def row(what, t, rel="ms", scale=1e3):
    a, b = statistics.median(t["ours"]), statistics.median(t["onnxruntime-genai"])
    return f"| {what} | {a * scale:.2f} {rel} | {b * scale:.2f} {rel} | {b / a:.2f}x |"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package")
    ap.add_argument("--image")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1, help="tokens chosen in the ttft test")
    ap.add_argument("--audio-seconds", type=float, default=30)
    ap.add_argument("--whisper-steps", type=int, default=32)
    ap.add_argument("--whisper")
    ap.add_argument("--skip", default="", help="tests to leave out: preprocess,encoder,ttft,whisper")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    samples, rows = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        pkg = a.package
        if not pkg:
            pkg = os.path.join(tmp, "qwen2_5_vl")
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"),
                            "--type", "qwen2_5_vl", "--dtype", "fp32", "--context", "2048", "--out", pkg],
                           check=True, stdout=subprocess.DEVNULL)
            print(f"package: a random tools/make_model.py --type qwen2_5_vl package (tiny)")
        image = a.image
        if not image:
            from test_vision_generate import png_bytes
            image = os.path.join(tmp, "image.png")
            with open(image, "wb") as f:
                f.write(png_bytes(np.random.default_rng(448).integers(0, 256, (448, 448, 3),
                                                                        dtype=np.uint8)))
        mtype, vision_path, vin, vout = vision_info(pkg)
        prompt = image_prompt(mtype)
        if not {"preprocess", "encoder", "ttft"} <= skip:
            om, tm = open_model(ours, pkg, a.threads), open_model(theirs, pkg, a.threads)
            op, tp = om.create_multimodal_processor(), tm.create_multimodal_processor()
        if "preprocess" not in skip:
            t = alternate(a.reps, {
                "ours": lambda: op(prompt, images=ours.Images.open(image)),
                "onnxruntime-genai": lambda: tp(prompt, images=theirs.Images.open(image))})
            samples["preprocess"] = t
            rows.append(row("preprocess (processor, one image)", t))
        if "encoder" not in skip:
            nt = op(prompt, images=ours.Images.open(image))
            feeds = encoder_feeds(nt, vin, vision_path)
            so = ours.SessionOptions()
            so.intra_op_num_threads = a.threads
            osess = ours.InferenceSession(vision_path, so)
            to = ort.SessionOptions()
            to.intra_op_num_threads, to.inter_op_num_threads = a.threads, 1
            tsess = ort.InferenceSession(vision_path, to, providers=["CPUExecutionProvider"])
            out = [vout["image_features"]]
            osess.run(out, feeds)  # warm-up (plans), both
            tsess.run(out, feeds)
            t = alternate(a.reps, {"ours": lambda: osess.run(out, feeds),
                                   "onnxruntime-genai": lambda: tsess.run(out, feeds)})
            samples["encoder"] = t
            rows.append(row(f"vision encoder ({', '.join(f'{k} {list(v.shape)}' for k, v in feeds.items())})", t))
        if "ttft" not in skip:
            first_token(ours, om, op, prompt, image, a.steps)  # warm-up
            first_token(theirs, tm, tp, prompt, image, a.steps)
            t = alternate(a.reps, {
                "ours": lambda: first_token(ours, om, op, prompt, image, a.steps),
                "onnxruntime-genai": lambda: first_token(theirs, tm, tp, prompt, image, a.steps)})
            samples["ttft"] = t
            rows.append(row(f"TTFT, one image ({os.path.basename(image)})", t))
        if "whisper" not in skip:
            wpkg = a.whisper
            if not wpkg:
                wpkg = os.path.join(tmp, "whisper_tiny_shaped")
                whisper_package(wpkg)
            wav = os.path.join(tmp, "clip.wav")
            write_wav(wav, a.audio_seconds)
            wo, wt = open_model(ours, wpkg, a.threads), open_model(theirs, wpkg, a.threads)
            po, pt = wo.create_multimodal_processor(), wt.create_multimodal_processor()
            n_ours = transcribe(ours, wo, po, wav, a.whisper_steps)  # warm-up
            n_theirs = transcribe(theirs, wt, pt, wav, a.whisper_steps)
            t = alternate(a.reps, {
                "ours": lambda: transcribe(ours, wo, po, wav, a.whisper_steps),
                "onnxruntime-genai": lambda: transcribe(theirs, wt, pt, wav, a.whisper_steps)})
            samples["whisper"] = t
            dur = a.audio_seconds
            t_rtf = {k: [x / dur for x in v] for k, v in t.items()}
            rows.append(row(f"Whisper RTF ({dur:g} s audio, {n_ours} / {n_theirs} tokens)",
                            t_rtf, rel="", scale=1))
    print(f"\n{a.reps} repetitions each, alternating; medians; {a.threads} threads; "
          f"onnxruntime-genai {theirs.__version__}, onnxruntime {ort.__version__}\n")
    print("| test | onnx-genai | onnxruntime-genai | theirs / ours |")
    print("|---|---|---|---|")
    for r in rows:
        print(r)
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    print(f"\ncommit {commit}, {platform.processor() or platform.machine()}, "
          f"load average {os.getloadavg()[0]:.2f}, package {pkg}")
    if a.json_out:
        with open(a.json_out, "w", encoding="utf-8") as f:
            json.dump({"args": vars(a), "samples": samples, "commit": commit}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
