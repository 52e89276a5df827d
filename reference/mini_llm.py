"""Qwen3 in plain PyTorch, reading and writing a paged KV cache.

The module tree mirrors Hugging Face's `Qwen3ForCausalLM` (`model.layers.N.self_attn.q_proj`, ...),
so a checkpoint's state dict loads by name. What makes Qwen3 Qwen3, each a place where an
implementation can silently drift from the checkpoint:

- RMSNorm computed in float32 and cast back;
- a per-head RMSNorm on queries and keys (`q_norm`, `k_norm`) before rotary embeddings;
- rotary embeddings in the half-split layout (rotate the two halves of each head, not pairs);
- grouped-query attention: `num_key_value_heads` K/V heads shared by the query heads;
- an explicit `head_dim` (heads * head_dim need not equal the hidden size); no biases;
- tied checkpoints have no `lm_head.weight`: the output layer reuses the embedding.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from kv_cache import AttentionMetadata, KVCache

__all__ = ["Qwen3Config", "Transformer", "CheckpointError"]


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded; the message says which file or tensor."""


_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 40960
    torch_dtype: str = "float32"

    @classmethod
    def from_dict(cls, raw: dict, source: str = "config.json") -> "Qwen3Config":
        model_type = raw.get("model_type")
        if model_type != "qwen3":
            raise CheckpointError(f"{source}: model_type is {model_type!r}; only 'qwen3' is supported")
        d = dict(raw)
        # transformers 5 writes `rope_parameters.rope_theta` and `dtype`; released Qwen3
        # checkpoints use `rope_theta` and `torch_dtype`. Accept both.
        if "rope_theta" not in d and isinstance(d.get("rope_parameters"), dict):
            d["rope_theta"] = d["rope_parameters"].get("rope_theta", cls.rope_theta)
        if "torch_dtype" not in d and "dtype" in d:
            d["torch_dtype"] = d["dtype"]
        if d.get("head_dim") is None and "hidden_size" in d and "num_attention_heads" in d:
            d["head_dim"] = d["hidden_size"] // d["num_attention_heads"]
        d.setdefault("num_key_value_heads", d.get("num_attention_heads"))
        names = {f.name for f in fields(cls)}
        missing = [n for n in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if n not in d]
        if missing:
            raise CheckpointError(f"{source}: missing field(s) {', '.join(missing)}")
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def dtype(self) -> torch.dtype:
        return _DTYPES.get(str(self.torch_dtype).replace("torch.", ""), torch.float32)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotary(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate `x` ([tokens, heads, head_dim]) by its positions, half-split layout."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64, device=x.device).float() / dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]
    angles = torch.cat((freqs, freqs), dim=-1)
    cos = angles.cos().to(x.dtype)[:, None, :]
    sin = angles.sin().to(x.dtype)[:, None, :]
    first, second = x[..., : dim // 2], x[..., dim // 2:]
    rotated = torch.cat((-second, first), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: Qwen3Config, layer: int):
        super().__init__()
        self.layer = layer
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.rope_theta = cfg.rope_theta
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, cfg.hidden_size, bias=False)
        self.q_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, kv: KVCache | None,
                meta: AttentionMetadata | None) -> torch.Tensor:
        n = x.shape[0]
        q = self.q_norm(self.q_proj(x).view(n, self.num_heads, self.head_dim))
        k = self.k_norm(self.k_proj(x).view(n, self.num_kv_heads, self.head_dim))
        v = self.v_proj(x).view(n, self.num_kv_heads, self.head_dim)
        q = rotary(q, positions, self.rope_theta)
        k = rotary(k, positions, self.rope_theta)

        if kv is None:  # one sequence, no cache: plain causal attention
            out = self._attend(q, k, v, past=0)
        else:
            k_cache, v_cache = kv.k[self.layer], kv.v[self.layer]
            flat = (-1, self.num_kv_heads, self.head_dim)
            k_cache.view(flat)[meta.slot_mapping] = k
            v_cache.view(flat)[meta.slot_mapping] = v
            outs, start = [], 0
            for q_len, ctx_len, table in zip(meta.query_lens, meta.context_lens, meta.block_tables):
                blocks = torch.as_tensor(table, dtype=torch.long, device=x.device)
                seq_k = k_cache[blocks].reshape(flat)[:ctx_len]
                seq_v = v_cache[blocks].reshape(flat)[:ctx_len]
                outs.append(self._attend(q[start:start + q_len], seq_k, seq_v, past=ctx_len - q_len))
                start += q_len
            out = torch.cat(outs, dim=0)
        return self.o_proj(out.reshape(n, self.num_heads * self.head_dim))

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, past: int) -> torch.Tensor:
        """Queries at positions past..past+len(q)-1 over keys 0..len(k)-1, causally.

        Shapes and kernel choices follow transformers' SDPA path (heads first, K/V expanded per
        group, `is_causal` for a whole prompt), which keeps the logits bit-identical to it in fp32.
        """
        group = self.num_heads // self.num_kv_heads
        q, k, v = (t.transpose(0, 1)[None] for t in (q, k, v))  # [1, heads, tokens, head_dim]
        k_len = k.shape[2]
        grouped = (1, self.num_kv_heads, group, k_len, self.head_dim)
        k = k[:, :, None].expand(*grouped).reshape(1, self.num_heads, k_len, self.head_dim)
        v = v[:, :, None].expand(*grouped).reshape(1, self.num_heads, k_len, self.head_dim)
        q_len = q.shape[2]
        if past == 0 and q_len == k_len:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.head_dim ** -0.5)
        else:
            q_pos = torch.arange(past, past + q_len, device=q.device)[:, None]
            mask = torch.arange(k_len, device=q.device)[None, :] <= q_pos
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.head_dim ** -0.5)
        return out[0].transpose(0, 1)


class MLP(nn.Module):
    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Qwen3Config, layer: int):
        super().__init__()
        self.self_attn = Attention(cfg, layer)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, positions, kv, meta):
        x = x + self.self_attn(self.input_layernorm(x), positions, kv, meta)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Model(nn.Module):
    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Transformer(nn.Module):
    """A Qwen3 causal language model.

    `forward(input_ids, positions, kv, meta)` runs one step over the concatenated new tokens of a
    batch of sequences (see `AttentionMetadata`) and returns their final hidden states; pass
    `kv=None, meta=None` for a single sequence without a cache. `compute_logits` turns hidden states
    into next-token logits.
    """

    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.config = cfg
        self.model = Qwen3Model(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor,
                kv: KVCache | None = None, meta: AttentionMetadata | None = None) -> torch.Tensor:
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x, positions, kv, meta)
        return self.model.norm(x)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)

    @torch.inference_mode()
    def logits(self, input_ids: list[int] | torch.Tensor) -> torch.Tensor:
        """Logits at every position of one sequence, without a cache: `[len, vocab]`."""
        ids = torch.as_tensor(input_ids, dtype=torch.long, device=self.device)
        return self.compute_logits(self(ids, torch.arange(len(ids), device=self.device)))

    def new_kv_cache(self, num_blocks: int, block_size: int) -> KVCache:
        cfg = self.config
        return KVCache(cfg.num_hidden_layers, num_blocks, block_size, cfg.num_key_value_heads,
                       cfg.head_dim, dtype=self.dtype, device=self.device)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, dtype: torch.dtype | None = None,
                        device: str | torch.device | None = None) -> "Transformer":
        """Load a Hugging Face Qwen3 checkpoint folder (`config.json` + `*.safetensors`, sharded or
        not). `dtype` defaults to the checkpoint's, `device` to the CPU."""
        from safetensors.torch import load_file

        path = os.fspath(path)
        config_path = os.path.join(path, "config.json")
        if not os.path.isfile(config_path):
            raise CheckpointError(f"{config_path}: no such file (is {path!r} a checkpoint folder?)")
        with open(config_path, encoding="utf-8") as f:
            cfg = Qwen3Config.from_dict(json.load(f), source=config_path)
        shards = sorted(name for name in os.listdir(path) if name.endswith(".safetensors"))
        if not shards:
            raise CheckpointError(f"{path}: no *.safetensors file")

        state: dict[str, torch.Tensor] = {}
        for shard in shards:
            state.update(load_file(os.path.join(path, shard)))
        model = cls(cfg)
        own = model.state_dict()
        expected = set(own)
        if cfg.tie_word_embeddings:
            expected.discard("lm_head.weight")
            state.pop("lm_head.weight", None)  # some tied checkpoints still store it
        missing = sorted(expected - set(state))
        unexpected = sorted(set(state) - expected)
        if missing or unexpected:
            parts = []
            if missing:
                parts.append(f"missing tensor(s) {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
            if unexpected:
                parts.append(f"unexpected tensor(s) {', '.join(unexpected[:5])}{' ...' if len(unexpected) > 5 else ''}")
            raise CheckpointError(f"{path}: " + "; ".join(parts))
        for name, tensor in state.items():
            have = own[name].shape
            if tuple(tensor.shape) != tuple(have):
                raise CheckpointError(f"{path}: tensor {name} has shape {tuple(tensor.shape)}, "
                                      f"config implies {tuple(have)}")
        model.load_state_dict(state, strict=False)
        return model.to(device=device or "cpu", dtype=dtype or cfg.dtype).eval()
