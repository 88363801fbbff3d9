"""The model types the maker writes, as Arch values (arch.py).

TINY: one small model per onnxruntime-genai model type we support, shaped like the tiny
Hugging Face checkpoints the builder research used (/work/notes/builder: vocab 500, hidden
128, 4 heads over 2 KV heads, head_dim 32, 2 or 4 layers, context 256, sliding window 8),
so that a package written here can be compared node by node with the builder's own
(tools/compare_graphs.py). Each entry differs from Llama only where the builder's graph
for that type differs.

REAL: random weights at the shapes of released checkpoints, for benchmarks.
"""

from dataclasses import replace

from .arch import ATTENTION, CONV, LINEAR, Arch

V, H, F, NH, KV, HD, CTX = 500, 128, 256, 4, 2, 32, 256


def _tiny(model_type, **kw):
    base = dict(model_type=model_type, hidden=H, inter=F, layers=2, heads=NH, kv_heads=KV, head_dim=HD,
                vocab=V, context=CTX, bos=V - 3, eos=V - 1, pad=V - 3)
    base.update(kw)
    return Arch(**base)


def _qwen35(model_type, moe, **kw):
    extra = dict(lin_k_heads=2, lin_v_heads=4, lin_k_dim=32, lin_v_dim=32, conv_kernel=4)
    if moe:
        extra.update(mlp="moe", experts=4, top_k=2, moe_inter=128, inter=128, shared_expert=True,
                     expert_bias="zero")
    extra.update(kw)
    return _tiny(model_type, layers=4, head_dim=64, rope_theta=1e7, partial_rotary=0.25, rotary="mrope",
                 mrope_section=(3, 3, 2), qk_norm=True, attn_gate=True,
                 layer_types=(LINEAR, LINEAR, LINEAR, ATTENTION), **extra)


_GEMMA = dict(mlp="gelu_tanh", emb_scale=11.31, emb_scale_text="11.31")
_GRANITE = dict(emb_scale=12.0, attn_scale=0.015625, residual_mul=0.22, logits_scale=0.125)

TINY = {
    "llama": _tiny("llama"),
    "decoder": _tiny("decoder"),
    "mistral": _tiny("mistral"),
    "internlm2": _tiny("internlm2"),
    "olmo": _tiny("olmo"),
    "qwen2": _tiny("qwen2", qkv_bias=True),
    "qwen3": _tiny("qwen3", qk_norm=True),
    "phi3": _tiny("phi3", eps=1e-5),
    "ernie4_5": _tiny("ernie4_5", eps=1e-5, rotary_interleaved=1),
    "chatglm": _tiny("chatglm", qkv_bias=True, rotary_interleaved=1, partial_rotary=0.5),
    "smollm3": _tiny("smollm3", layers=4, nope_layers=(3,)),
    "granite": _tiny("granite", **_GRANITE),
    "granitemoehybrid": _tiny("granitemoehybrid", **_GRANITE),
    "hunyuandensev1": _tiny("hunyuandensev1", eps=1e-5, rotary="external", qk_norm=True,
                            qk_norm_after_rope=True),
    "nemotron": _tiny("nemotron", norm="layer", mlp="relu2", partial_rotary=0.5),
    "phi": _tiny("phi", kv_heads=NH, norm="layer", parallel=True, mlp="gelu_fc", qkv_bias=True, o_bias=True,
                 lm_head_bias=True, partial_rotary=0.5),
    "phi3small": _tiny("phi3small", norm="layer", qkv_bias=True, o_bias=True, mlp="gegelu", mlp_bias=True,
                       emb_scale=10.0, attn_scale=0.03125, logits_scale=0.125, mask_sum_cast=True),
    "gemma": _tiny("gemma", **_GEMMA),
    "gemma2": _tiny("gemma2", layers=4, sandwich=True, sliding_window=8, sliding_layers=(0, 2), softcap=50.0,
                    final_softcap=30.0, **_GEMMA),
    "gemma3_text": _tiny("gemma3_text", layers=4, sandwich=True, qk_norm=True, sliding_window=8,
                         sliding_layers=(0, 2), rope_theta=1e6, local_rope_theta=1e4, **_GEMMA),
    "gemma4_text": _tiny("gemma4_text", layers=4, sandwich=True, qk_norm=True, v_norm=True, sliding_window=8,
                         sliding_layers=(0, 2), rotary="external", rope_theta=1e6, local_rope_theta=1e4,
                         global_head_dim=64, attn_scale=1.0, kv_dim_fixed=True, layer_scalar=1.0,
                         final_softcap=30.0, tied=True, **_GEMMA),
    "gptoss": _tiny("gptoss", eps=1e-5, qkv_bias=True, o_bias=True, sinks=True, sliding_window=8,
                    sliding_layers=(0,), mlp="moe", experts=4, top_k=2, moe_inter=128, inter=128,
                    router_bias=True, expert_bias="random", swiglu_alpha=1.702, swiglu_beta=1.0,
                    swiglu_limit=7.0, rope_theta=150000.0,
                    rope_scaling=dict(rope_type="yarn", factor=32.0, beta_fast=32.0, beta_slow=1.0,
                                      original_max_position_embeddings=4096, truncate=False)),
    "lfm2": _tiny("lfm2", layers=4, eps=1e-5, rope_theta=1e6, qk_norm=True, conv_L=3,
                  layer_types=(CONV, ATTENTION, CONV, ATTENTION),
                  norm_names=("operator_layernorm", "ffn_layernorm")),
    "qwen3_5_text": _qwen35("qwen3_5_text", moe=False),
    "qwen3_5_moe_text": _qwen35("qwen3_5_moe_text", moe=True),
}

# Split packages (vision + embedding + text decoder fed inputs_embeds): the text model of
# the matching *_text type under the vision-language model type.
SPLIT = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}

# Split packages whose text model exists only inside them. Qwen2.5-VL's is Qwen2 (q/k/v
# biases) with sectioned MRoPE before attention, as the builder's Qwen25VLTextModel applies
# it (mrope_section (16, 24, 24) of head_dim 128 scaled to head_dim 32). Not in the parity
# type lists (tests/parity): onnxruntime-genai 0.18 decodes the shorter row of a
# right-padded batch of these types with a mask of ones over its pad columns, so its batch
# is no oracle there; tests/images/test_vision_generate.py checks them with images.
VL = {"qwen2_5_vl": _tiny("qwen2_5_vl", qkv_bias=True, rope_theta=1e6, rotary="mrope",
                          mrope_section=(4, 6, 6), mrope_layout=0),
      # Qwen3-VL: Qwen3 (q/k norms) with interleaved MRoPE (the builder's Qwen3VLTextModel;
      # its DeepStack features stay inside the vision graph)
      "qwen3_vl": _tiny("qwen3_vl", qk_norm=True, rope_theta=5e6, rotary="mrope",
                        mrope_section=(6, 5, 5), mrope_layout=1),
      # Phi-3-vision: Phi-3 with plain positions; image tokens are negative ids (-k for
      # image k) that the embedding graph replaces by the vision graph's features
      "phi3v": _tiny("phi3v", eps=1e-5),
      # Gemma 3: gemma3_text's layers; 256 <image_soft_token>s an image take its features
      "gemma3": replace(TINY["gemma3_text"], model_type="gemma3")}

# Image token ids of the tiny Qwen3.5 vision-language packages (just below the specials).
QWEN35_VISION_IDS = dict(vision_start_token_id=V - 7, vision_end_token_id=V - 6, image_token_id=V - 5,
                         video_token_id=V - 4)

REAL = {
    # Qwen/Qwen3.5-0.8B config.json (text_config): 24 layers, [lin, lin, lin, full] x 6
    "qwen3.5-0.8b": Arch(
        model_type="qwen3_5_text", hidden=1024, inter=3584, layers=24, heads=8, kv_heads=2, head_dim=256,
        vocab=248320, context=262144, eps=1e-6, rope_theta=1e7, partial_rotary=0.25, rotary="mrope",
        mrope_section=(11, 11, 10), qk_norm=True, attn_gate=True, tied=True,
        layer_types=(LINEAR, LINEAR, LINEAR, ATTENTION) * 6, lin_k_heads=16, lin_v_heads=16,
        lin_k_dim=128, lin_v_dim=128, conv_kernel=4, bos=248044, eos=248046, pad=248044, weight_std=0.02),
    # LiquidAI/LFM2-350M config.json: 16 layers, attention at 2, 5, 8, 10, 12, 14
    "lfm2-350m": Arch(
        model_type="lfm2", hidden=1024, inter=4608, layers=16, heads=16, kv_heads=8, head_dim=64,
        vocab=65536, context=128000, eps=1e-5, rope_theta=1e6, qk_norm=True, conv_L=3, tied=True,
        layer_types=tuple(ATTENTION if i in (2, 5, 8, 10, 12, 14) else CONV for i in range(16)),
        norm_names=("operator_layernorm", "ffn_layernorm"), bos=65533, eos=65535, pad=65533,
        weight_std=0.02),
}

# Model types of onnxruntime-genai (model_type.h) the maker does not write, and why.
NOT_WRITTEN = {
    "gpt2": "the builder has no GPT-2 path (its packages come from other exporters; "
            "../shared/models/ortgenai/hf-internal-testing/tiny-random-gpt2-* is one)",
    "phimoe": "the builder cannot produce it (Phi-3.5-MoE's LongRoPE is not implemented in its "
              "MoE path, and it targets CUDA only)",
    "gemma4_text with MoE": "its experts use geglu, which onnxruntime's CPU MoE refuses (the dense "
                            "gemma4_text is written)",
}


def tiny(model_type, layers=None):
    if model_type in SPLIT:
        model_type = SPLIT[model_type]
    if model_type in VL:
        return _cut(VL[model_type], layers)
    if model_type not in TINY:
        raise ValueError(f"unknown model type {model_type!r}; one of "
                         f"{', '.join(sorted(TINY) + sorted(SPLIT) + sorted(VL))}")
    return _cut(TINY[model_type], layers)


def _cut(a, layers):
    """The first `layers` layers of a (tests use fewer layers); a model whose layers are
    all alike may also take more (tests of deep graphs: more outputs than layers)."""
    if not layers:
        return a
    if layers < 1 or (layers > a.layers and (a.layer_types or a.sliding_layers or a.nope_layers)):
        raise ValueError(f"{a.model_type}: --layers must be in [1, {a.layers}]")
    return replace(a, layers=layers, layer_types=a.layer_types[:layers])


def real(name, layers=None):
    if name not in REAL:
        raise ValueError(f"unknown real-shape model {name!r}; one of {', '.join(sorted(REAL))}")
    return _cut(REAL[name], layers)
