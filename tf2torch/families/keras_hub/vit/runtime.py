"""Helper modules for keras-hub's ViT and DeiT backbones, inlined by source into generated files
(runtime library code, ``codegen/library.py``): patching and embedding, the pre-norm encoder blocks."""

from __future__ import annotations

import torch
from torch import nn

from tf2torch.runtime.keras_layers import KerasMultiHeadAttention


class KerasHubViTPatchingAndEmbedding(nn.Module):
    """keras-hub's ViTPatchingAndEmbedding (and DeiTEmbeddings, ``distillation_token=True``): a
    patch-strided conv, patches in row-major order, the class token (then DeiT's distillation token)
    first, plus learned position embeddings (DeiT keeps them as (1, positions, hidden))."""

    def __init__(self, channels, hidden, patch_size, num_positions, use_class_token=True, use_patch_bias=True,
                 distillation_token=False):
        super().__init__()
        self.patch_embedding = nn.Conv2d(channels, hidden, patch_size, stride=patch_size, bias=use_patch_bias)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden)) if use_class_token else None
        self.distillation_token = nn.Parameter(torch.zeros(1, 1, hidden)) if distillation_token else None
        shape = (1, num_positions, hidden) if distillation_token else (num_positions, hidden)
        self.position_embedding = nn.Parameter(torch.zeros(shape))

    def forward(self, images):
        x = self.patch_embedding(images).flatten(2).transpose(1, 2)  # (N, patches, hidden)
        tokens = [t.expand(x.shape[0], -1, -1) for t in (self.class_token, self.distillation_token) if t is not None]
        return torch.cat((*tokens, x), dim=1) + self.position_embedding


class KerasHubViTBlock(nn.Module):
    """keras-hub's ViTEncoderBlock: x + attention(ln_1(x)), then x + mlp(ln_2(x)) with an exact-GELU MLP."""

    def __init__(self, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True, use_mlp_bias=True):
        super().__init__()
        head = hidden // num_heads
        self.ln_1 = nn.LayerNorm(hidden, eps=epsilon)
        self.mha = KerasMultiHeadAttention(hidden, hidden, hidden, num_heads, head, head, hidden, use_mha_bias)
        self.ln_2 = nn.LayerNorm(hidden, eps=epsilon)
        self.dense_1 = nn.Linear(hidden, mlp_dim, bias=use_mlp_bias)
        self.dense_2 = nn.Linear(mlp_dim, hidden, bias=use_mlp_bias)

    def forward(self, x):
        y = self.ln_1(x)
        x = x + self.mha(y, y)
        return x + self.dense_2(nn.functional.gelu(self.dense_1(self.ln_2(x))))


class KerasHubViTEncoder(nn.Module):
    """keras-hub's ViTEncoder: its blocks in turn, then a LayerNorm."""

    def __init__(self, num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True, use_mlp_bias=True):
        super().__init__()
        self.blocks = nn.ModuleList(KerasHubViTBlock(hidden, num_heads, mlp_dim, epsilon, use_mha_bias, use_mlp_bias)
                                    for _ in range(num_layers))
        self.ln = nn.LayerNorm(hidden, eps=epsilon)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln(x)


class KerasHubDeiTEncoder(KerasHubViTEncoder):
    """keras-hub's DeiTEncoder: the ViT encoder's math, returning as DeiT does (hidden states, and the
    empty hidden-state and attention-score stacks it returns unless asked for them)."""

    def __init__(self, num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True):
        super().__init__(num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias)
        self.num_heads = num_heads

    def forward(self, x):
        steps = x.shape[1]
        y = super().forward(x)
        return y, y.new_zeros((0, steps, y.shape[-1])), y.new_zeros((0, self.num_heads, steps, steps))
