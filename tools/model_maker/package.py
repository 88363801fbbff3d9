"""Write a whole package: model.onnx (+ .data), genai_config.json, tokenizer files."""

import json
import os

from .decoder import DecoderBuilder, pad_heads


def genai_config(spec, filename="model.onnx"):
    """genai_config.json in the shape onnxruntime-genai's model builder writes for CPU."""
    return {
        "model": {
            "bos_token_id": spec.bos_token_id,
            "context_length": spec.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": filename,
                "head_size": spec.head_size,
                "hidden_size": spec.hidden_size,
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "past_key_names": "past_key_values.%d.key",
                    "past_value_names": "past_key_values.%d.value",
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": "present.%d.key",
                    "present_value_names": "present.%d.value",
                },
                "num_attention_heads": spec.num_heads,
                "num_hidden_layers": spec.num_layers,
                "num_key_value_heads": spec.num_kv_heads,
            },
            "eos_token_id": spec.eos_token_id,
            "pad_token_id": spec.pad_token_id,
            "type": spec.model_type,
            "vocab_size": spec.vocab_size,
        },
        "search": {
            "diversity_penalty": 0.0,
            "do_sample": False,
            "early_stopping": True,
            "length_penalty": 1.0,
            "max_length": spec.context_length,
            "min_length": 0,
            "no_repeat_ngram_size": 0,
            "num_beams": 1,
            "num_return_sequences": 1,
            "past_present_share_buffer": True,
            "repetition_penalty": 1.0,
            "temperature": 1.0,
            "top_k": 50,
            "top_p": 1.0,
        },
    }


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=4, ensure_ascii=False)
        f.write("\n")


def write_package(out_dir, spec, weights, opts, tokenizer, tokenizer_cfg):
    """Build the graph and write every file; returns a summary dict."""
    os.makedirs(out_dir, exist_ok=True)
    if opts.head_multiple:
        spec, weights = pad_heads(spec, weights, opts.head_multiple)
    builder = DecoderBuilder(spec, opts, out_dir)
    model_path, data_bytes = builder.build(weights)
    write_json(os.path.join(out_dir, "genai_config.json"), genai_config(spec))
    write_json(os.path.join(out_dir, "tokenizer.json"), tokenizer)
    write_json(os.path.join(out_dir, "tokenizer_config.json"), tokenizer_cfg)
    return {
        "dir": out_dir,
        "model_bytes": os.path.getsize(model_path),
        "data_bytes": data_bytes,
        "ops": dict(sorted(builder.g.op_counts.items())),
        "initializers": len(builder.g.initializers),
        "head_size": spec.head_size,
        "true_head_size": spec.true_head_size or spec.head_size,
    }
