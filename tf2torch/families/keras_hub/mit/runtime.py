"""Helper modules for keras-hub's MiT (SegFormer) backbone, inlined by source into generated files
(runtime library code, ``codegen/library.py``): overlapping patch embedding, efficient-attention blocks."""

from __future__ import annotations

import torch
from torch import nn


class KerasHubMiTPatchEmbedding(nn.Module):
    """keras-hub's OverlappingPatchingAndEmbedding: a conv over the zero-padded image (patch_size // 2 on each
    side), its patches in row-major order, a LayerNorm: (N, C, H, W) -> (N, H' * W', dim)."""

    def __init__(self, channels, dim, patch_size, stride):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, patch_size, stride=stride, padding=patch_size // 2)
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, images):
        return self.norm(self.proj(images).flatten(2).transpose(1, 2))


class KerasHubMiTBlock(nn.Module):
    """keras-hub's HierarchicalTransformerEncoder on (N, H * W, dim) of a square image: x + attention(norm1(x)),
    then x + mix_ffn(norm2(x)). The attention's keys and values come from the image reduced by a
    sr_ratio-strided conv and a LayerNorm (sr_ratio > 1); scores are scaled after the product; the
    Mix-FFN is fc1, a 3x3 depthwise conv over the image, tanh GELU, fc2."""

    def __init__(self, dim, num_heads, sr_ratio, epsilon):
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=epsilon), nn.LayerNorm(dim, eps=epsilon)
        self.q, self.k, self.v, self.proj = (nn.Linear(dim, dim) for _ in range(4))
        self.sr = nn.Conv2d(dim, dim, sr_ratio, stride=sr_ratio) if sr_ratio > 1 else None
        self.sr_norm = nn.LayerNorm(dim, eps=1e-5) if sr_ratio > 1 else None
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.dwconv = nn.Conv2d(4 * dim, 4 * dim, 3, padding=1, groups=4 * dim)

    @staticmethod
    def image(x):
        side = int(x.shape[1] ** 0.5)  # keras-hub takes the sequence as a square image
        return x.transpose(1, 2).unflatten(2, (side, side))  # (N, C, H, W)

    def attention(self, x):
        heads = lambda t: t.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)  # noqa: E731
        source = x
        if self.sr is not None:
            source = self.sr_norm(self.sr(self.image(x)).flatten(2).transpose(1, 2))
        weights = torch.softmax((heads(self.q(x)) @ heads(self.k(source)).transpose(-1, -2)) * self.scale, dim=-1)
        return self.proj((weights @ heads(self.v(source))).transpose(1, 2).flatten(2))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        y = self.dwconv(self.image(self.fc1(self.norm2(x)))).flatten(2).transpose(1, 2)
        return x + self.fc2(nn.functional.gelu(y, approximate="tanh"))
