"""Float bilinear resizes as TF's and LiteRT's kernels compute them, on any of the three pixel grids and any
size (tables from ``tfgraph/resize_grid.py``, held as buffers); nearest-neighbour resizes are index gathers
(``TFLitePixelGather``). Each kernel's own float32 expression order is kept: torch's bilinear mode rounds
differently (measured up to 7e-7 apart from TF on values near 1), so it is not used.
"""

from __future__ import annotations

import torch
from torch import nn


class TFResizeBilinear(nn.Module):
    """A float bilinear resize of (N, C, H, W) by per-axis tables: ``rows`` / ``cols`` (2, size) hold the
    lower and upper source index of each output row / column, ``row_weights`` / ``col_weights`` (2, size)
    what ``kernel`` reads from them:

    - ``"tf"`` (TF's ``compute_lerp``): weights[1] is the lerp; top = tl + (tr - tl) * x_lerp, bottom likewise,
      out = top + (bottom - top) * y_lerp.
    - ``"litert"`` (LiteRT's ``ResizeBilinearGeneric``): weights are (1 - d, d) per axis; each corner's scale
      is the float32 product of its row and column weight, and the output the sum
      tl * s00 + tr * s01 + bl * s10 + br * s11 accumulated in that order.
    - ``"litert_2x2"`` (LiteRT's ``ResizeBilinear2x2``, an exact 2x upscale on the legacy grid): rows first,
      then columns, each output either copies its lower source or is (lower + upper) / 2 where weights[1]
      is nonzero.
    """

    def __init__(self, rows, cols, kernel="tf"):
        super().__init__()
        self.kernel = kernel
        for name, size in (("rows", rows), ("cols", cols)):
            self.register_buffer(name, torch.zeros(2, size, dtype=torch.int64))
            self.register_buffer(name[:-1] + "_weights", torch.zeros(2, size, dtype=torch.float32))

    def forward(self, x):
        x = x.float()
        if self.kernel == "litert_2x2":
            return _mean_2x2(_mean_2x2(x, 2, self.rows, self.row_weights[1]), 3, self.cols, self.col_weights[1])
        left, right = x[..., self.cols[0]], x[..., self.cols[1]]  # (indexing: faster than index_select on dim 3)
        if self.kernel == "tf":
            # top and bottom are the same column lerp of two source rows: taken once per source row, then
            # gathered (the same float32 operations on the same values as per output row, fewer of them;
            # in place, a + b for b + a: IEEE addition commutes exactly)
            lerped = (right - left).mul_(self.col_weights[1]).add_(left)
            top, bottom = lerped.index_select(2, self.rows[0]), lerped.index_select(2, self.rows[1])
            return (bottom - top).mul_(self.row_weights[1][:, None]).add_(top)
        tl, tr = left.index_select(2, self.rows[0]), right.index_select(2, self.rows[0])
        bl, br = left.index_select(2, self.rows[1]), right.index_select(2, self.rows[1])
        r0, r1 = self.row_weights[0][:, None], self.row_weights[1][:, None]
        c0, c1 = self.col_weights[0], self.col_weights[1]
        # separate multiplies and adds, each rounded to float32, summed in this order, as LiteRT's loop (NEON's
        # vmla is unfused); in place on the gathered copies
        out = tl.mul_(r0 * c0).add_(tr.mul_(r0 * c1))
        return out.add_(bl.mul_(r1 * c0)).add_(br.mul_(r1 * c1))


def _mean_2x2(x, dim, index, averaged):
    """Along ``dim``: the lower source where ``averaged`` is 0, (lower + upper) / 2 where it is not."""
    lower, upper = x.index_select(dim, index[0]), x.index_select(dim, index[1])
    mask = (averaged != 0).view(-1, 1) if dim == 2 else averaged != 0
    return torch.where(mask, (lower + upper) * 0.5, lower)
