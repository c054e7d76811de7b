"""Helper modules generated files may carry (inlined by source), for Keras layers torch lacks.

Each class depends only on ``torch`` / ``nn`` / ``F``, has buffers named like the Keras weights it
holds, and is tested here as real code before any generated file copies it.
"""

from __future__ import annotations

import torch
from torch import nn


class KerasNormalization(nn.Module):
    """keras.layers.Normalization: (x - mean) / max(sqrt(variance), 1e-7) along ``dim``."""

    def __init__(self, channels, dim):
        super().__init__()
        self.dim = int(dim)
        self.register_buffer("mean", torch.zeros(channels))
        self.register_buffer("variance", torch.ones(channels))

    def forward(self, x):
        shape = [1] * x.dim()
        shape[self.dim] = -1
        std = torch.clamp(torch.sqrt(self.variance.view(shape)), min=1e-7)
        return (x - self.mean.view(shape)) / std


class KerasRescaling(nn.Module):
    """keras.layers.Rescaling with per-channel ``scale`` / ``offset``: x * scale + offset along ``dim``."""

    def __init__(self, channels, dim):
        super().__init__()
        self.dim = int(dim)
        self.register_buffer("scale", torch.ones(channels))
        self.register_buffer("offset", torch.zeros(channels))

    def forward(self, x):
        shape = [1] * x.dim()
        shape[self.dim] = -1
        return x * self.scale.view(shape) + self.offset.view(shape)


class KerasLayerScale(nn.Module):
    """ConvNeXt's LayerScale (keras.applications): x * gamma, one gamma per channel along ``dim``."""

    def __init__(self, channels, dim):
        super().__init__()
        self.dim = int(dim)
        self.gamma = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        shape = [1] * x.dim()
        shape[self.dim] = -1
        return x * self.gamma.view(shape)


class KerasMultiHeadAttention(nn.Module):
    """keras.layers.MultiHeadAttention attending over axis 1 of (N, T, D) inputs.

    One Linear per Keras sublayer (query, key, value, attention_output; heads flattened into the
    features), then softmax((query / sqrt(key_dim)) @ keyᵀ) @ value per head, as Keras computes it.
    A query row whose every key is masked gets zero weights, as Keras 3's masked softmax gives it; with
    ``uniform_when_masked`` uniform ones, as Keras 3's fused path does (a layer with dropout=0).
    """

    def __init__(self, query_size, key_size, value_size, num_heads, key_dim, value_dim, output_dim,
                 use_bias=True, key_bias=None, uniform_when_masked=False):
        super().__init__()
        self.uniform_when_masked = uniform_when_masked
        self.num_heads, self.key_dim, self.value_dim = num_heads, key_dim, value_dim
        self.scale = 1.0 / float(key_dim) ** 0.5
        self.query = nn.Linear(query_size, num_heads * key_dim, bias=use_bias)
        # Whisper's attention has no key bias (key_bias=False); elsewhere the key follows use_bias
        self.key = nn.Linear(key_size, num_heads * key_dim, bias=use_bias if key_bias is None else key_bias)
        self.value = nn.Linear(value_size, num_heads * value_dim, bias=use_bias)
        self.attention_output = nn.Linear(num_heads * value_dim, output_dim, bias=use_bias)

    def forward(self, query, value, key=None, use_causal_mask=False, return_attention_scores=False,
                attention_mask=None, query_mask=None, value_mask=None, key_mask=None):
        key = value if key is None else key
        # (N, T, heads * dim) -> (N, heads, T, dim)
        q = self.query(query).unflatten(-1, (self.num_heads, self.key_dim)).transpose(1, 2)
        k = self.key(key).unflatten(-1, (self.num_heads, self.key_dim)).transpose(1, 2)
        v = self.value(value).unflatten(-1, (self.num_heads, self.value_dim)).transpose(1, 2)
        scores = (q * self.scale) @ k.transpose(-1, -2)  # Keras scales the query, then multiplies
        # Keras merges every mask given (attention_mask (N, T, S); the Keras masks of query (N, T) and of
        # value / key (N, S)) into one boolean (N, T, S): a masked query row attends to nothing
        keep = None if attention_mask is None else attention_mask.bool()
        if query_mask is not None:
            keep = query_mask.bool().unsqueeze(-1) if keep is None else keep & query_mask.bool().unsqueeze(-1)
        for mask in (value_mask, key_mask):
            if mask is not None:
                keep = mask.bool().unsqueeze(-2) if keep is None else keep & mask.bool().unsqueeze(-2)
        if use_causal_mask:  # query step i sees key steps j <= i
            allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
            if keep is None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            else:
                keep = keep & allowed
        if keep is not None:
            keep = keep.unsqueeze(1)  # the same for every head
            if self.uniform_when_masked:  # masked logits at -0.7 * float32 max: a fully masked row is uniform
                scores = torch.softmax(torch.where(keep, scores, -2.372671e38), dim=-1)
            else:  # masked logits at -1e9, then the masked weights zeroed: a fully masked row is zeros
                scores = torch.where(keep, torch.softmax(torch.where(keep, scores, -1.0e9), dim=-1), 0.0)
        else:
            scores = torch.softmax(scores, dim=-1)
        out = self.attention_output((scores @ v).transpose(1, 2).flatten(2))
        return (out, scores) if return_attention_scores else out


class TFConstant(nn.Module):
    """A constant operand of a TF graph op (a layer-norm gamma, a preprocessing mean), as a buffer of
    the graph's shape: ``x * self.c.value`` broadcasts exactly as TF does (channels-last operands)."""

    def __init__(self, shape):
        super().__init__()
        self.register_buffer("value", torch.zeros(shape))


class KerasEinsumDense(nn.Module):
    """keras.layers.EinsumDense: einsum(equation, x, kernel) + bias, the bias in Keras's own broadcast
    shape (e.g. (heads, dim) for "abc,cde->abde" with bias_axes "de")."""

    def __init__(self, equation, kernel_shape, bias_shape=None):
        super().__init__()
        self.equation = equation
        self.kernel = nn.Parameter(torch.zeros(kernel_shape))
        self.bias = nn.Parameter(torch.zeros(bias_shape)) if bias_shape is not None else None

    def forward(self, x):
        y = torch.einsum(self.equation, x, self.kernel)
        return y + self.bias if self.bias is not None else y


class KerasAttention(nn.Module):
    """keras.layers.Attention (``score_mode`` "dot" or "concat") and AdditiveAttention ("additive"):
    scores from query and key, softmax over the key steps, then the weighted sum of the values. A causal
    mask subtracts 1e9 from the scores above the diagonal, as Keras does (not -inf)."""

    def __init__(self, score_mode, use_scale, dim=None):
        super().__init__()
        self.score_mode = score_mode
        scale_shape = (dim,) if score_mode == "additive" else ()
        self.scale = nn.Parameter(torch.ones(scale_shape)) if use_scale else None
        self.concat_score_weight = nn.Parameter(torch.ones(())) if score_mode == "concat" else None

    def forward(self, query, value, key=None, use_causal_mask=False):
        key = value if key is None else key
        if self.score_mode == "dot":
            scores = query @ key.transpose(-2, -1)
            if self.scale is not None:
                scores = scores * self.scale
        else:
            pairs = query.unsqueeze(-2) + key.unsqueeze(-3)  # (N, Tq, Tv, D)
            if self.score_mode == "concat":
                inner = torch.tanh(self.scale * pairs) if self.scale is not None else torch.tanh(pairs)
                scores = self.concat_score_weight * inner.sum(-1)
            else:
                scale = self.scale if self.scale is not None else 1.0
                scores = (scale * torch.tanh(pairs)).sum(-1)
        if use_causal_mask:
            allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
            scores = torch.where(allowed, scores, scores - 1.0e9)
        return torch.softmax(scores, dim=-1) @ value


class KerasGroupedQueryAttention(nn.Module):
    """keras.layers.GroupQueryAttention on (N, T, D) inputs: EinsumDense projections (kernels in Keras's
    shapes), each key/value head repeated for its group of query heads, softmax(q k^T / sqrt(head_dim)) v,
    an optional sigmoid gate, and the output projection."""

    def __init__(self, feature_dim, num_query_heads, num_key_value_heads, head_dim, use_bias=True, use_gate=False):
        super().__init__()
        self.repeats = num_query_heads // num_key_value_heads
        self.scale = 1.0 / float(head_dim) ** 0.5
        u, v, h, m = num_query_heads, num_key_value_heads, head_dim, feature_dim
        shapes = {"query": ((m, u, h), (u, h)), "key": ((m, v, h), (v, h)), "value": ((m, v, h), (v, h)),
                  "attention_output": ((u, h, m), (m,))}
        if use_gate:
            shapes["gate"] = ((m, u, h), (u, h))
        for name, (kernel, bias) in shapes.items():
            self.register_parameter(f"{name}_kernel", nn.Parameter(torch.zeros(kernel)))
            self.register_parameter(f"{name}_bias", nn.Parameter(torch.zeros(bias)) if use_bias else None)
        self.use_gate = use_gate

    def _project(self, name, equation, x):
        y = torch.einsum(equation, x, getattr(self, f"{name}_kernel"))
        bias = getattr(self, f"{name}_bias")
        return y + bias if bias is not None else y

    def forward(self, query, value, key=None, use_causal_mask=False):
        key = value if key is None else key
        q = self._project("query", "bqm,muh->bquh", query)
        k = self._project("key", "bkm,mvh->bkvh", key).repeat_interleave(self.repeats, dim=2)
        v = self._project("value", "bkm,mvh->bkvh", value).repeat_interleave(self.repeats, dim=2)
        scores = torch.einsum("bquh,bkuh->buqk", q * self.scale, k)
        if use_causal_mask:  # query step i sees key steps j <= i
            allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        out = torch.einsum("buqk,bkuh->bquh", torch.softmax(scores, dim=-1), v)
        if self.use_gate:
            out = out * torch.sigmoid(self._project("gate", "bqm,muh->bquh", query))
        return self._project("attention_output", "bquh,uhm->bqm", out)


class KerasMaskedRNN:
    """A torch nn.LSTM / nn.GRU / nn.RNN (batch_first) run as Keras runs a recurrent layer under a mask
    (from Embedding(mask_zero=True) or Masking): at a masked step the state is carried over unchanged
    and the output repeats the previous one (zeros before the first unmasked step). Returns what the
    torch module returns: (outputs, final state)."""

    @staticmethod
    def run(rnn, x, mask, zero_masked=False):
        """``zero_masked``: masked steps output zeros (Keras's zero_output_for_mask, which Bidirectional
        sets when it returns sequences, so the reversed direction lines up), else the previous output."""
        state, previous, outputs = None, None, []
        for t in range(x.shape[1]):
            y, new = rnn(x[:, t:t + 1], state)
            if state is None:  # torch's default initial state: zeros
                state = tuple(torch.zeros_like(s) for s in new) if isinstance(new, tuple) else torch.zeros_like(new)
                previous = torch.zeros_like(y[:, 0])
            keep = mask[:, t].reshape(1, -1, 1)  # states are (layers, N, H)
            if isinstance(new, tuple):
                state = tuple(torch.where(keep, n, s) for n, s in zip(new, state))
            else:
                state = torch.where(keep, new, state)
            previous = torch.where(mask[:, t].unsqueeze(-1), y[:, 0], previous)
            outputs.append(torch.where(mask[:, t].unsqueeze(-1), y[:, 0], 0.0) if zero_masked else previous)
        return torch.stack(outputs, 1), state


class KerasConvLSTM(nn.Module):
    """keras.layers.ConvLSTM1D/2D/3D on (N, T, *spatial, C): at each step the i, f, c, o gates are a conv
    of the input (its stride, dilation, padding and bias) plus a stride-1 "same" conv of the hidden state
    (no bias); c = f * c + i * act(gate_c), h = o * act(c), from zero states. Returns the hidden states
    of every step (N, T, *spatial, F), the last one and the last cell state, channels-last as Keras."""

    def __init__(self, dims, channels, filters, kernel_size, stride, padding, dilation, recurrent_padding,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True):
        super().__init__()
        conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[dims]
        self.input_conv = conv(channels, 4 * filters, kernel_size, stride=stride, padding=padding,
                               dilation=dilation, bias=use_bias)
        self.recurrent_conv = conv(filters, 4 * filters, kernel_size, padding=recurrent_padding, bias=False)
        # by the names the converter passes (literals, never callables from the file)
        make = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "relu": nn.ReLU, "hard_sigmoid": nn.Hardsigmoid,
                "linear": nn.Identity, "keras2_hard_sigmoid": nn.Identity}
        self.activation, self.recurrent_activation = make[activation](), make[recurrent_activation]()
        # Keras 2's hard_sigmoid (tf_keras's ConvLSTM default) is clip(0.2 x + 0.5, 0, 1), not torch's
        self.keras2_hard_sigmoid = recurrent_activation == "keras2_hard_sigmoid"

    def gate(self, z):
        z = self.recurrent_activation(z)
        return torch.clamp(0.2 * z + 0.5, 0.0, 1.0) if self.keras2_hard_sigmoid else z

    def forward(self, x, go_backwards=False):
        steps = x.movedim(-1, 2)  # (N, T, C, *spatial): each step channels-first for the convs
        if go_backwards:
            steps = steps.flip(1)
        h = c = torch.empty(0)
        outputs = []
        for t in range(steps.shape[1]):
            z = self.input_conv(steps[:, t])
            if t == 0:
                h = z.new_zeros((z.shape[0], z.shape[1] // 4, *z.shape[2:]))
                c = torch.zeros_like(h)
            i, f, g, o = (z + self.recurrent_conv(h)).chunk(4, dim=1)
            c = self.gate(f) * c + self.gate(i) * self.activation(g)
            h = self.gate(o) * self.activation(c)
            outputs.append(h)
        return torch.stack(outputs, 1).movedim(2, -1), h.movedim(1, -1), c.movedim(1, -1)
