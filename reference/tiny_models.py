"""Tiny Qwen3 checkpoints generated from a seed, so tests and demos never download weights.

`build_model(...)` makes one in memory; `checkpoint_dir(...)` writes the same weights as a Hugging
Face folder (`config.json` in the form released Qwen3 checkpoints use, plus `model.safetensors`)
into the cache and returns its path. The same arguments always give byte-identical files.

With the usual initialiser (std 0.02) a random model's greedy decoding collapses into one repeated
token, which hides bugs: outputs of a broken cache look like those of a correct one. Weights are
drawn with a larger spread (`init_std`, default 0.5) so that greedy continuations vary.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

import torch

from mini_llm import Qwen3Config, Transformer

__all__ = ["TINY", "QWEN3_VOCAB_SIZE", "tiny_config", "build_model", "checkpoint_dir"]

QWEN3_VOCAB_SIZE = 151_936  # the embedding size of released Qwen3 checkpoints (tokenizer: 151,669)

TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16)


def tiny_config(**overrides) -> dict:
    """A Qwen3 `config.json` as a dict, in the released checkpoints' own field names."""
    shape = {**TINY, **overrides}
    # Qwen3's special ids only exist in a full-size vocabulary.
    full_vocab = shape["vocab_size"] > 151645
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 151643 if full_vocab else None,
        "eos_token_id": 151645 if full_vocab else None,
        "hidden_act": "silu",
        "initializer_range": 0.02,
        "max_position_embeddings": 40960,
        "max_window_layers": shape["num_hidden_layers"],
        "rms_norm_eps": 1e-6,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "use_sliding_window": False,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "use_cache": True,
        **shape,
    }


def _weights(cfg: Qwen3Config, seed: int, init_std: float) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    skeleton = Transformer(cfg)  # only for the names and shapes, in the checkpoint's order
    state = {}
    for name, param in skeleton.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name.endswith("norm.weight"):
            # Norm gains near 1, not exactly 1, so a missing norm changes the logits.
            state[name] = 1.0 + 0.1 * torch.randn(param.shape, generator=gen)
        else:
            fan_in = param.shape[-1]
            # Scale projections by fan-in so activations neither vanish nor explode with depth;
            # the embedding keeps init_std itself.
            std = init_std if name.endswith("embed_tokens.weight") else init_std * (64 / fan_in) ** 0.5
            state[name] = std * torch.randn(param.shape, generator=gen)
    return {k: v.contiguous() for k, v in state.items()}


def build_model(seed: int = 0, init_std: float = 0.5, device: str | torch.device = "cpu",
                dtype: torch.dtype = torch.float32, **shape) -> Transformer:
    """A tiny seeded Qwen3 in memory (shape: `TINY`, overridable per field)."""
    cfg = Qwen3Config.from_dict(tiny_config(**shape))
    model = Transformer(cfg)
    model.load_state_dict(_weights(cfg, seed, init_std), strict=False)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.to(device=device, dtype=dtype).eval()


def checkpoint_dir(seed: int = 0, init_std: float = 0.5, cache: str | None = None, **shape) -> str:
    """Write (once) the checkpoint `build_model(seed, init_std, **shape)` would build, as a Hugging
    Face folder under the cache, and return its path."""
    from safetensors.torch import save_file

    config = tiny_config(**shape)
    key = hashlib.sha256(json.dumps([config, seed, init_std], sort_keys=True).encode()).hexdigest()[:12]
    root = cache or os.path.join(os.environ.get("KVPRACTICE_CACHE") or
                                 os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".cache"),
                                 "models")
    path = os.path.join(root, f"tiny-qwen3-{key}")
    if os.path.isfile(os.path.join(path, "model.safetensors")):
        return path
    os.makedirs(root, exist_ok=True)
    cfg = Qwen3Config.from_dict(config)
    # Written to a temporary folder and renamed, so concurrent test processes never see half a file.
    tmp = tempfile.mkdtemp(prefix=".tiny-", dir=root)
    with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    save_file(_weights(cfg, seed, init_std), os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
    try:
        os.rename(tmp, path)
    except OSError:  # another process won the race; its files are identical
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return path
