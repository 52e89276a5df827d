"""The paged KV cache: per-layer key and value tensors split into fixed-size blocks.

`kv.k[layer][block]` is one block's keys, shape `[block_size, num_kv_heads, head_dim]` (a view into
the layer's tensor, so writing into it writes the cache). A sequence owns a block table, the list of
blocks holding its tokens in order; token `i` of the sequence lives in block `table[i // block_size]`
at offset `i % block_size`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["KVCache", "AttentionMetadata"]


class KVCache:
    """Keys and values for every layer: `k[layer]` and `v[layer]` are
    `[num_blocks, block_size, num_kv_heads, head_dim]` tensors."""

    def __init__(self, num_layers: int, num_blocks: int, block_size: int, num_kv_heads: int,
                 head_dim: int, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]

    @property
    def num_layers(self) -> int:
        return len(self.k)

    def bytes_per_block(self) -> int:
        """Bytes one block occupies across all layers, keys and values."""
        per_layer = self.k[0][0].numel() * self.k[0].element_size()
        return 2 * per_layer * self.num_layers


@dataclass
class AttentionMetadata:
    """Where one forward step's tokens go in the cache and what each of them may attend to.

    The step's tokens are the concatenation of each sequence's new tokens (`query_lens[i]` of them);
    sequence `i` then has `context_lens[i]` tokens in the cache, the new ones last.
    """

    query_lens: list[int]
    context_lens: list[int]
    block_tables: list[list[int]]
    slot_mapping: torch.Tensor  # [num_tokens] flat slot (block * block_size + offset) per new token

    @classmethod
    def build(cls, query_lens: list[int], context_lens: list[int], block_tables: list[list[int]],
              block_size: int, device: str | torch.device = "cpu") -> "AttentionMetadata":
        slots: list[int] = []
        for q_len, ctx_len, table in zip(query_lens, context_lens, block_tables):
            if ctx_len > len(table) * block_size:
                raise ValueError(f"{ctx_len} tokens do not fit in {len(table)} blocks of {block_size}")
            for pos in range(ctx_len - q_len, ctx_len):
                slots.append(table[pos // block_size] * block_size + pos % block_size)
        return cls(query_lens, context_lens, block_tables,
                   torch.tensor(slots, dtype=torch.long, device=device))
