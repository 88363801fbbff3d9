"""What a decoder looks like, as data: one Arch describes every layout the model maker
writes (classic decoders, Qwen3.5's linear-attention hybrids, LFM2's short convolutions,
mixtures of experts), each feature a field whose default is the Llama layout. The graph
writer (transformer.py) reads only this; catalog.py fills it in per model type.
"""

from dataclasses import dataclass, field

ATTENTION, LINEAR, CONV = "attention", "linear_attention", "conv"


@dataclass
class Arch:
    model_type: str              # genai_config model.type
    hidden: int
    inter: int                   # MLP width (shared expert width for MoE, when it has one)
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int = 256
    eps: float = 1e-6
    # rotary embedding
    rope_theta: float = 10000.0
    rope_scaling: dict = field(default_factory=dict)   # {"rope_type": "llama3"|"yarn"|"linear", ...}
    partial_rotary: float = 1.0
    rotary_interleaved: int = 0
    rotary: str = "gqa"          # gqa: inside GroupQueryAttention; external: RotaryEmbedding
                                 # nodes on position_ids [B, S]; mrope: MRotaryEmbedding on [3, B, S]
    mrope_section: tuple = ()
    mrope_layout: int = 1        # MRotaryEmbedding's: 1 interleaved (Qwen3-VL, 3.5), 0 sectioned (2.5-VL)
    nope_layers: tuple = ()      # layers without any rotary embedding (SmolLM3)
    local_rope_theta: float = 0.0  # separate caches for sliding layers (Gemma 3)
    # layer mix; empty = every layer is attention
    layer_types: tuple = ()
    # attention
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    qk_norm_after_rope: bool = False   # HunYuan: rotary first, then the per-head norms
    attn_gate: bool = False      # Qwen3.5 full layers: q_proj doubled, output * sigmoid(gate)
    attn_scale: float = 0.0      # 0: 1/sqrt(head_dim)
    global_head_dim: int = 0     # Gemma 4: head size of the full (not sliding) layers, 0 = head_dim
    v_norm: bool = False         # Gemma 4: per-head RMS norm of the values too
    kv_dim_fixed: bool = False   # KV inputs' last dim written as the number (Gemma 4: it varies by
                                 # layer), else the builder's symbolic kv_cache_dim
    sliding_window: int = 0
    sliding_layers: tuple = ()   # layers with a local window (and window-sized KV buffers)
    window_cache: bool = True    # sliding_window_cache=1 (the builder's CPU default)
    softcap: float = 0.0
    sinks: bool = False          # gpt-oss: per-head attention sinks, GroupQueryAttention input 11
    mask_sum_cast: bool = False  # Phi-3-small: the builder also casts the mask's row sums to int32
                                 # (SparseAttention's key lengths), unused by dense layers
    # norms and residuals
    norm: str = "rms"            # rms (SimplifiedLayerNormalization) | layer (LayerNormalization)
    sandwich: bool = False       # Gemma 2/3: norms after attention and after the MLP too
    parallel: bool = False       # Phi: attention and MLP both read the input norm, summed
    norm_names: tuple = ("input_layernorm", "post_attention_layernorm")
    emb_scale: float = 0.0       # embeddings * this (Gemma: sqrt(hidden), Granite)
    emb_scale_text: str = ""     # how the builder names that constant ("11.31")
    residual_mul: float = 0.0    # Granite: branch outputs * this before the residual add
    layer_scalar: float = 0.0    # Gemma 4: residual stream and layer output * this after each layer
    logits_scale: float = 0.0    # Granite / Phi-3-small: logits * this
    final_softcap: float = 0.0   # Gemma 2: logits = c * tanh(logits / c)
    lm_head_bias: bool = False
    tied: bool = False           # shared_embeddings: the embedding reads lm_head's weight
    # MLP
    mlp: str = "silu"            # silu | gelu_tanh (gated) | gelu_fc (Phi fc1/fc2) | relu2 |
                                 # gegelu (Phi-3-small) | moe
    mlp_bias: bool = False
    experts: int = 0
    top_k: int = 0
    moe_inter: int = 0
    shared_expert: bool = False  # Qwen3.5-MoE: a dense MLP gated into the MoE output (GatedAdd)
    router_bias: bool = False
    expert_bias: str = ""        # "" none | "zero" (Qwen3.5-MoE writes zero biases) | "random" (gpt-oss)
    swiglu_alpha: float = 1.0
    swiglu_beta: float = 0.0
    swiglu_limit: float = 0.0
    # Qwen3.5 gated delta-net layers
    lin_k_heads: int = 0
    lin_v_heads: int = 0
    lin_k_dim: int = 0
    lin_v_dim: int = 0
    conv_kernel: int = 0
    # LFM2 short convolution layers
    conv_L: int = 0
    # tokens and extra genai_config keys
    bos: int = 0
    eos: object = 0
    pad: int = 0
    config_extra: dict = field(default_factory=dict)
    weight_std: float = 0.08     # random weights: std of Linear and embedding weights

    # -- derived --------------------------------------------------------------------
    def kind(self, i):
        return self.layer_types[i] if self.layer_types else ATTENTION

    def attention_layers(self):
        return [i for i in range(self.layers) if self.kind(i) == ATTENTION]

    def sliding(self, i):
        return self.sliding_window > 0 and i in self.sliding_layers

    def hd(self, i):
        """Head size of layer i."""
        return self.global_head_dim if self.global_head_dim and not self.sliding(i) else self.head_dim

    def rotary_dim(self, i=None):
        return int((self.head_dim if i is None else self.hd(i)) * self.partial_rotary)

    def q_width(self, i=None):
        return self.heads * (self.head_dim if i is None else self.hd(i))

    def kv_width(self, i=None):
        return self.kv_heads * (self.head_dim if i is None else self.hd(i))

    def conv_dim(self):
        return 2 * self.lin_k_heads * self.lin_k_dim + self.lin_v_heads * self.lin_v_dim

    def position_rank(self):
        """Rank of the position_ids input, 0 when the graph has none."""
        return {"mrope": 3, "external": 2}.get(self.rotary, 0)

    def check(self):
        """Raise ValueError for combinations onnxruntime's CPU kernels cannot run."""
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.model_type}: {self.heads} heads over {self.kv_heads} KV heads")
        r = self.rotary_dim()
        if self.rotary == "gqa" and (r // 2) % 8:
            raise ValueError(f"{self.model_type}: GroupQueryAttention needs rotary_dim/2 a multiple "
                             f"of 8 (head_dim {self.head_dim}, partial {self.partial_rotary})")
        if self.rotary == "mrope" and sum(self.mrope_section) != r // 2:
            raise ValueError(f"{self.model_type}: mrope_section {self.mrope_section} must sum to {r // 2}")
        if self.mlp == "moe" and not (self.experts and self.top_k and self.moe_inter):
            raise ValueError(f"{self.model_type}: MoE needs experts, top_k and moe_inter")
        for i in range(self.layers):
            if self.kind(i) not in (ATTENTION, LINEAR, CONV):
                raise ValueError(f"{self.model_type}: layer {i} has unknown kind {self.kind(i)}")
