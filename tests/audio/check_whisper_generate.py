#!/usr/bin/env python3
"""Whisper generation end to end: a builder-made package of a random-initialised
WhisperForConditionalGeneration, opened by og.Model and run through
``processor(prompt, audios=...)`` -> ``generator.set_inputs`` -> greedy
``generate_next_token``, against Hugging Face transformers' greedy generation
(GenerationMixin.generate with the same decoder prompt, PyTorch) on the same features.

The model: 2 + 2 layers, d_model 64, 4 heads, Whisper's real vocabulary size (51865), its
token ids (<|endoftext|> 50257, <|startoftranscript|> 50258, languages from 50259,
<|translate|> 50358, <|transcribe|> 50359, <|notimestamps|> 50363, timestamps from
50364). The package's tokenizer.json is written here: a byte-level BPE with Whisper's
special tokens at those ids (no Whisper vocabulary is downloadable here), so the
prompt's ids come from our tokenizer and are checked against the tokenizers library's.

Cases (every one: our ids == transformers' ids, the whole sequence; our prompt ids ==
tokenizers'): English transcription without timestamps, with timestamps (no
<|notimestamps|>), German translation, a batch of two clips with one prompt each, and
a short max_length (the generation stops there), beam search with 4 beams (transformers'
beam search, length_penalty 1, early stopping); then `onnx-genai transcribe --ids` on a
65 s clip (three 30 s windows) against transformers' features and ids window by window
and `onnx-genai generate --audio` on the first case (skipped when the CLI is not beside the
library). onnxruntime-genai 0.18
is no oracle here: onnxruntime 1.31.1 crashes on the builder's encoder (its Attention
nodes' empty optional bias; ARCHITECTURE.md).

Needs torch, transformers, onnx_ir and onnxruntime-genai's builder: exit 77 (skip)
without them. About 70 s.
"""
import json
import os
import subprocess
import sys
import tempfile

# the package maker and the clips (exits 77 without torch, onnx_ir or the builder)
from check_whisper_builder import clip, make_package, np, og, torch
from check_whisper_pipeline import EOT, specials, write_tokenizer
try:
    import tokenizers
    from transformers import GenerationMixin
except ImportError as e:
    print(f"SKIP: {e} (this check needs tokenizers and transformers' GenerationMixin)")
    sys.exit(77)

SOT = 50258
def hf_generate(model, feats, prompt_ids, max_length, num_beams=1):
    """transformers' greedy search (GenerationMixin, not Whisper's override, which adds its
    own logits processors: onnxruntime-genai applies none) from the decoder prompt."""
    with torch.no_grad():
        out = GenerationMixin.generate(
            model, input_features=torch.from_numpy(feats),
            decoder_input_ids=torch.tensor(prompt_ids, dtype=torch.long), do_sample=False,
            num_beams=num_beams, max_length=max_length, eos_token_id=EOT, pad_token_id=EOT,
            length_penalty=1.0, early_stopping=True,
            begin_suppress_tokens=None, suppress_tokens=None, forced_decoder_ids=None)
    return [[int(t) for t in row] for row in out]


def ours(model, processor, prompt, audios, max_length, num_beams=1):
    inputs = processor(prompt, audios=audios)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, do_sample=False, num_beams=num_beams,
                              length_penalty=1.0, early_stopping=True,
                              batch_size=inputs["audio_features"].as_numpy().shape[0])
    gen = og.Generator(model, params)
    gen.set_inputs(inputs)
    while not gen.is_done():
        gen.generate_next_token()
    n = inputs["audio_features"].as_numpy().shape[0]
    return inputs, [gen.get_sequence(i).tolist() for i in range(n)]


def check_cli_generate(pkg, wav, want):
    """`onnx-genai generate DIR --audio FILE --json` (the default decoder prompt) gives the
    first case's sequence, which equals transformers'."""
    exe = os.path.join(os.path.dirname(os.environ.get("ONNX_GENAI_LIBRARY", "")), "onnx-genai")
    if not os.access(exe, os.X_OK):
        print(f"SKIP the CLI case: no {exe}")
        return []
    r = subprocess.run([exe, "generate", pkg, "--audio", wav, "--max-length", "40", "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return [f"generate --audio failed: {r.stderr.strip()}"]
    got = json.loads(r.stdout)["sequences"][0]
    print(f"generate --audio: {'same' if got == want else 'DIFFERENT'} ids")
    return [] if got == want else [f"generate --audio: {got} vs transformers' {want}"]


def long_features(path):
    """A WAV's features as transformers computes long-form input (WhisperFeatureExtractor,
    truncation=False, padding="longest")."""
    import wave
    from transformers import WhisperFeatureExtractor
    with wave.open(path) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    return WhisperFeatureExtractor(feature_size=80)(
        x, sampling_rate=16000, truncation=False, padding="longest",
        return_tensors="np").input_features


def check_cli_windows(tmp, pkg, hf_model, hf_tok):
    """`onnx-genai transcribe --ids` on a 65 s clip: three 30 s windows of the whole clip's
    features (the last zero-padded to 3000 frames), each generated from the decoder prompt,
    the tokens after it (less a final EOS) concatenated; against transformers' features
    (WhisperFeatureExtractor, truncation=False, padding="longest") cut the same way and
    transformers' greedy ids per window."""
    exe = os.path.join(os.path.dirname(os.environ.get("ONNX_GENAI_LIBRARY", "")), "onnx-genai")
    if not os.access(exe, os.X_OK):
        print(f"SKIP the CLI case: no {exe}")
        return []
    path = clip(tmp, "long.wav", 65.0, 330, 2)
    r = subprocess.run([exe, "transcribe", pkg, path, "--language", "en", "--max-length", "40",
                        "--ids"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"transcribe failed: {r.stderr.strip()}"]
    got = [int(x) for x in r.stdout.strip().split(",") if x]
    feats = long_features(path)
    prompt = hf_tok.encode("<|startoftranscript|><|en|><|transcribe|><|notimestamps|>",
                           add_special_tokens=False).ids
    want, windows = [], 0
    for at in range(0, feats.shape[2], 3000):
        win = np.zeros((1, 80, 3000), np.float32)
        part = feats[:, :, at:at + 3000]
        win[:, :, :part.shape[2]] = part
        seq = hf_generate(hf_model, win, [prompt], 40)[0][len(prompt):]
        want += seq[:-1] if seq and seq[-1] == EOT else seq
        windows += 1
    same = got == want
    print(f"transcribe --ids, 65 s in {windows} windows: {'same' if same else 'DIFFERENT'} ids "
          f"({len(got)} tokens)" + ("" if same else f"\n    ours {got}\n    transformers {want}"))
    return [] if same else ["transcribe's windows differ from transformers'"]


def favour_timestamps(model):
    with torch.no_grad():
        model.model.decoder.embed_tokens.weight[specials()["<|0.00|>"]:] *= 1.5


def check_cli_seek(tmp, pkg, hf_model, hf_tok):
    """`onnx-genai transcribe --timestamps --ids` on the 65 s clip: each window where
    transformers' sequential long-form decoding seeks (WhisperGenerationMixin.
    _retrieve_segment on the window's tokens: to the first timestamp of the last pair,
    times the stride 2; the whole window after a single timestamp ending or without a
    pair), the kept tokens its segments' tokens; against transformers' greedy ids per
    window (GenerationMixin.generate: no timestamp logits rules, which neither we nor
    onnxruntime-genai apply) and its own seeking."""
    from transformers.models.whisper.generation_whisper import WhisperGenerationMixin
    exe = os.path.join(os.path.dirname(os.environ.get("ONNX_GENAI_LIBRARY", "")), "onnx-genai")
    if not os.access(exe, os.X_OK):
        print(f"SKIP the seek case: no {exe}")
        return []
    path = os.path.join(tmp, "long.wav")
    r = subprocess.run([exe, "transcribe", pkg, path, "--language", "en", "--max-length", "40",
                        "--timestamps", "--ids"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"transcribe --timestamps failed: {r.stderr.strip()}"]
    got = [int(x) for x in r.stdout.strip().split(",") if x]
    feats = long_features(path)
    prompt = hf_tok.encode("<|startoftranscript|><|en|><|transcribe|>",
                           add_special_tokens=False).ids
    ts0 = specials()["<|0.00|>"]
    total, seek, want, offsets = feats.shape[2], 0, [], []
    while seek < total:
        take = min(3000, total - seek)
        win = np.zeros((1, 80, 3000), np.float32)
        win[:, :, :take] = feats[:, :, seek:seek + take]
        seq = hf_generate(hf_model, win, [prompt], 40)[0][len(prompt):]
        final = seek + take >= total
        if not final and seq and seq[-1] == EOT:
            seq = seq[:-1]
        segments, offset = WhisperGenerationMixin._retrieve_segment(
            torch.tensor(seq), [None], [0.0], ts0, [take], 0.02, 0.01, 2, 0, 0, False,
            torch.zeros((1, len(prompt)), dtype=torch.long))
        kept = [int(t) for s in segments for t in s["tokens"]]
        want += kept[:-1] if final and kept and kept[-1] == EOT else kept
        offsets.append(int(offset))
        seek += int(offset)
    same = got == want and any(o != 3000 for o in offsets[:-1])
    print(f"transcribe --timestamps --ids, 65 s: windows advanced by {offsets} frames "
          f"(a seek by a timestamp pair needed); "
          f"{'same' if same else 'DIFFERENT'} ids ({len(got)} tokens)" +
          ("" if same else f"\n    ours {got}\n    transformers {want}"))
    return [] if same else ["transcribe's timestamp seeking differs from transformers'"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # init_std 0.3, not 0.02: at the default the random decoder repeats one token
        # whatever the audio; at 0.3 each clip gives its own varied ids. The timestamp
        # tokens' embedding rows (the output projection is tied to them) scaled by 1.5, so
        # that timestamps, and pairs of them, come up among the text (the seek case needs
        # them; unscaled, a random model never writes one)
        hf_model, pkg = make_package(tmp, prepare=favour_timestamps, init_std=0.3)
        hf_tok = write_tokenizer(pkg)
        model = og.Model(pkg)
        processor = model.create_multimodal_processor()
        a = clip(tmp, "a.wav", 3.0, 440, 0)
        b = clip(tmp, "b.wav", 7.5, 230, 1)
        cases = [
            ("en transcribe, no timestamps",
             "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>", [a], 40),
            ("en transcribe, timestamps", "<|startoftranscript|><|en|><|transcribe|>", [b], 40),
            ("de translate", "<|startoftranscript|><|de|><|translate|><|notimestamps|>", [b],
             40),
            ("batch of two", ["<|startoftranscript|><|en|><|transcribe|><|notimestamps|>"] * 2,
             [a, b], 30),
            ("max_length 6", "<|startoftranscript|><|fr|><|transcribe|><|notimestamps|>", [a],
             6),
            ("4 beams", "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>", [a], 30),
        ]
        for name, prompt, paths, max_length in cases:
            audios = og.Audios.open(*paths)
            beams = 4 if "beams" in name else 1
            inputs, got = ours(model, processor, prompt, audios, max_length, beams)
            feats = inputs["audio_features"].as_numpy()
            ids = inputs["input_ids"].as_numpy()
            prompts = prompt if isinstance(prompt, list) else [prompt]
            want_prompt = [hf_tok.encode(p, add_special_tokens=False).ids for p in prompts]
            if ids.tolist() != want_prompt:
                failures.append(f"{name}: prompt ids {ids.tolist()} != tokenizers' {want_prompt}")
            sp = specials()
            expect = [[sp[t] for t in p.replace("|><|", "|>\0<|").split("\0")] for p in prompts]
            if ids.tolist() != expect:
                failures.append(f"{name}: prompt ids {ids.tolist()} are not Whisper's {expect}")
            want = hf_generate(hf_model, feats, want_prompt, max_length, beams)
            same = got == want
            print(f"{name}: {'same' if same else 'DIFFERENT'} ids; ours {got}"
                  + ("" if same else f"\n    transformers {want}"))
            if not same:
                failures.append(f"{name}: ids differ from transformers'")
            if name.startswith("en transcribe, no"):
                first_ids = want[0]
            if len(got) == 2 and got[0] == got[1]:
                failures.append(f"{name}: two clips gave the same ids (the audio is not used)")
            if max_length > 10 and len(set(got[0][len(expect[0]):])) < 3:
                failures.append(f"{name}: a degenerate model (one token repeated): no test")
        failures += check_cli_windows(tmp, pkg, hf_model, hf_tok)
        failures += check_cli_seek(tmp, pkg, hf_model, hf_tok)
        failures += check_cli_generate(pkg, a, first_ids)
        # the C API's order: features before the prompt, both required
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=20)
        gen = og.Generator(model, params)
        try:
            gen.append_tokens([SOT])
            failures.append("a whisper generator ran a prompt without audio features")
        except og.OgError as e:
            print(f"prompt without features refused: {e}")
    for msg in failures:
        print("FAIL:", msg)
    if failures:
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
