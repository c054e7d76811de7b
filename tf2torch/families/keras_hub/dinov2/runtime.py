"""Helper modules for keras-hub's DINOv2 (inlined by source into generated files): its embeddings, whose
position embeddings are resized exactly as TensorFlow's ``tf.image.resize(..., "bicubic")`` resizes them,
and its encoder blocks (layer scale; a GELU MLP or a SwiGLU FFN)."""

from __future__ import annotations

import torch
from torch import nn

from tf2torch.runtime.keras_layers import KerasMultiHeadAttention


class KerasHubDINOV2Embedding(nn.Module):
    """keras-hub's DINOV2Embedding: a patch-strided conv (patches row-major), the class token first, plus
    the position embeddings, then the register tokens after the class token (they get no position).

    keras-hub keeps the (1, 1 + S * S, dim) position embeddings of its pretraining size and, when the image
    size differs, adds them resized to the image's patch grid with keras.ops.image.resize bicubic, which
    on the TF backend is tf.image.resize. Its kernel is NOT torch's F.interpolate bicubic (a=-0.75, clamped
    edges, ~9% off): without antialias TF runs ResizeBicubic with half-pixel centers, Keys' cubic at
    a=-0.5 read from a 1024-entry table (the offset rounded to it), taps outside the grid dropped and the
    rest renormalised; with antialias ScaleAndTranslate's exact Keys cubic, widened by in/out when it
    shrinks. Both are linear in each axis: the (out, in) matrices are computed here, in float32 as TF does.
    """

    TABLE = 1024  # resize_bicubic_op.cc kTableSize

    def __init__(self, channels, hidden, patch_size, grid, num_positions, resize_from=None, antialias=False,
                 num_register_tokens=0):
        super().__init__()
        self.grid = tuple(grid)  # the image's patch grid (rows, columns)
        self.patch_embeddings = nn.Conv2d(channels, hidden, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.register_tokens = nn.Parameter(torch.zeros(1, num_register_tokens, hidden)) \
            if num_register_tokens else None
        self.position_embeddings = nn.Parameter(torch.zeros(1, num_positions, hidden))
        self.resize_from = resize_from  # the positions' square grid side, or None: added as they are
        if resize_from is not None:
            weights = self.antialiased if antialias else self.bicubic
            self.register_buffer("rows", weights(resize_from, self.grid[0]), persistent=False)
            self.register_buffer("cols", weights(resize_from, self.grid[1]), persistent=False)

    @classmethod
    def bicubic(cls, size, out):
        """ResizeBicubic(half_pixel_centers=True)'s (out, size) weights."""
        a, n = -0.5, cls.TABLE
        t = torch.arange(n + 1, dtype=torch.float64) / n  # the table: built in double, stored as float
        near = (((a + 2) * t - (a + 3)) * t * t + 1).float()
        t = t + 1
        far = (((a * t - 5 * a) * t + 8 * a) * t - 4 * a).float()
        scale = torch.tensor(size, dtype=torch.float32) / out
        where = (torch.arange(out, dtype=torch.float32) + 0.5) * scale - 0.5
        base = torch.floor(where)
        offset = torch.round((where - base) * n).long()  # lrintf: to nearest, ties to even (torch.round)
        taps = base.long()[:, None] + torch.arange(-1, 3)
        w = torch.stack((far[offset], near[offset], near[n - offset], far[n - offset]), dim=1)
        inside = (taps >= 0) & (taps < size)
        w = torch.where(inside, w, 0.0)
        total = w.sum(1, keepdim=True)
        w = w * torch.where(total.abs() >= 1000 * torch.finfo(torch.float32).tiny, 1.0 / total, 1.0)
        return torch.zeros(out, size).scatter_add_(1, taps.clamp(0, size - 1), w)

    @staticmethod
    def antialiased(size, out):
        """ScaleAndTranslate(kernel_type="keyscubic", antialias=True, translation 0)'s (out, size) weights."""
        inv_scale = torch.tensor(1.0 / float(torch.tensor(out, dtype=torch.float32) / size), dtype=torch.float32)
        widen = torch.clamp(inv_scale, min=1.0)  # the kernel widens only when downsampling
        sample = (torch.arange(out, dtype=torch.float32) + 0.5) * inv_scale
        start = torch.ceil(sample - 2 * widen - 0.5).clamp(0, size - 1)
        end = torch.floor(sample + 2 * widen - 0.5).clamp(0, size - 1) + 1
        source = torch.arange(size, dtype=torch.float32)
        x = ((source[None, :] + 0.5 - sample[:, None]) * (1.0 / widen)).abs()
        keys = torch.where(x >= 2, 0.0, torch.where(x >= 1, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0,
                                                    ((1.5 * x - 2.5) * x) * x + 1.0))
        keys = torch.where((source >= start[:, None]) & (source < end[:, None]), keys, 0.0)
        total = keys.sum(1, keepdim=True)  # a span of (near) zero weight stays all zeros, as TF leaves it
        return torch.where(total.abs() >= 1000 * torch.finfo(torch.float32).tiny, keys * (1.0 / total), 0.0)

    def positions(self):
        if self.resize_from is None:
            return self.position_embeddings
        side = self.resize_from
        grid = self.position_embeddings[:, 1:].unflatten(1, (side, side))  # (1, S, S, dim)
        resized = torch.einsum("ik,jl,bkld->bijd", self.rows, self.cols, grid).flatten(1, 2)
        return torch.cat((self.position_embeddings[:, :1], resized), dim=1)

    def forward(self, images):
        x = self.patch_embeddings(images).flatten(2).transpose(1, 2)  # (N, patches, hidden)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.positions()
        if self.register_tokens is None:
            return x
        return torch.cat((x[:, :1], self.register_tokens.expand(x.shape[0], -1, -1), x[:, 1:]), dim=1)


class KerasHubDINOV2Layer(nn.Module):
    """keras-hub's DINOV2Layer: h = x + layer_scale1 * attention(norm1(x)), then
    h + layer_scale2 * ffn(norm2(h)); the FFN is fc1 (exact GELU), fc2, or with ``swiglu`` weights_in,
    silu(first half) * second half, weights_out. Drop path and dropout are identities at inference."""

    def __init__(self, hidden, num_heads, intermediate, swiglu=False):
        super().__init__()
        head = hidden // num_heads
        self.norm1 = nn.LayerNorm(hidden, eps=1e-6)
        self.attention = KerasMultiHeadAttention(hidden, hidden, hidden, num_heads, head, head, hidden)
        self.layer_scale1 = nn.Parameter(torch.ones(hidden))
        self.norm2 = nn.LayerNorm(hidden, eps=1e-6)
        self.swiglu = swiglu
        if swiglu:  # keras-hub's SwiGLU width: 2/3 of intermediate_dim, rounded up to a multiple of 8
            inner = (int(intermediate * 2 / 3) + 7) // 8 * 8
            self.weights_in, self.weights_out = nn.Linear(hidden, 2 * inner), nn.Linear(inner, hidden)
        else:
            self.fc1, self.fc2 = nn.Linear(hidden, intermediate), nn.Linear(intermediate, hidden)
        self.layer_scale2 = nn.Parameter(torch.ones(hidden))

    def ffn(self, x):
        if self.swiglu:
            gate, value = self.weights_in(x).chunk(2, dim=-1)
            return self.weights_out(nn.functional.silu(gate) * value)
        return self.fc2(nn.functional.gelu(self.fc1(x)))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attention(y, y) * self.layer_scale1
        return x + self.ffn(self.norm2(x)) * self.layer_scale2


class KerasHubDINOV2Encoder(nn.Module):
    """keras-hub's DINOV2Encoder: its layers in turn; returns the last output, then every layer's output
    (the pyramid "stage1", "stage2" …) in Keras's flatten order of that dict (keys sorted as strings)."""

    def __init__(self, num_layers, hidden, num_heads, intermediate, swiglu=False):
        super().__init__()
        self.blocks = nn.ModuleList(KerasHubDINOV2Layer(hidden, num_heads, intermediate, swiglu)
                                    for _ in range(num_layers))
        self.order = sorted(range(num_layers), key=lambda i: f"stage{i + 1}")

    def forward(self, x):
        stages = []
        for block in self.blocks:
            x = block(x)
            stages.append(x)
        return (x, *(stages[i] for i in self.order))
