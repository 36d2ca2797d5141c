"""Exact fast kernels for LeNet's input sensitivities, many networks at once.

Same numbers as :func:`nadcore.nads.estimators.input_sensitivity_secant` and
:func:`nadcore.nads.estimators.input_gradient` on a :class:`nadcore.nets.LeNet` (with pooling) up
to float rounding (tests/test_kernels.py), much faster, because they use LeNet's structure:

Secant (:func:`lenet_secant`). A perturbation ``x +- h e_i`` of one pixel changes the first
convolution's output only by ``+- h`` times the kernel placed at ``i``: a 5x5 window, inside a 6x6
window aligned to the 2x2 max-pool, i.e. a 3x3 window of the pooled map. The second convolution is
linear, so its output changes by the convolution of that 3x3 change alone: one matrix product
(6 x 9 pooled changes -> 16 x 8 x 8 outputs, the pool-aligned window holding the 7x7 frame of
changes) per perturbed input. The second pool then sees that window (4x4 after pooling) and the
fully connected layers run on all 400 features. Pixels are grouped into 16 classes (by ``r % 4``
and ``c % 4``) within which every window sits at the same offset, and the maps are padded with
-inf (ignored by the max-pools) so that border pixels need no special case. Nothing is
approximated: outside these windows the activations equal the unperturbed network's exactly.
About 0.23 MFLOP per perturbed input instead of 0.83, as batched matrix products and elementwise
maxima instead of small convolutions.

Gradient (:func:`lenet_gradients`). B networks at one input: the first convolution of all B
networks is one matrix product (the input, hence its patches, is shared), the second a grouped
convolution in channels-last layout, the fully connected layers batched matrix-vector products.
Autograd differentiates this program with respect to the first convolution's output; the last
step is the first convolution's transpose, a grouped transposed convolution. On the CPU in float32
:func:`nadcore.kernels.native.lenet_input_gradients` does the same for one network at a time in C.

Parameters come stacked, ``name -> (M, *shape)`` as :func:`nadcore.kernels.draw.draw_parameters`
returns them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from nadcore.kernels import native
from nadcore.kernels.cpu import linear
from nadcore.nets.architectures import LeNet

__all__ = ["lenet_supported", "lenet_secant", "lenet_gradients"]

_K = 5  # LeNet's kernel size


def lenet_supported(model, input_shape) -> bool:
    """True when the kernels here apply: a registry LeNet with pooling, 5x5 kernels, and a square
    input whose side is a multiple of 4 with at least 4x4 cells after the second pool (32x32 and
    28x28 qualify)."""
    if type(model) is not LeNet or not model.pooling or len(input_shape) != 3:
        return False
    C, H, W = input_shape
    convs = (model.conv1, model.conv2)
    if (
        H != W
        or H % 4
        or any(
            c.kernel_size != (_K, _K)
            or c.stride != (1, 1)
            or c.padding != (0, 0)
            or c.dilation != (1, 1)
            or c.groups != 1
            for c in convs
        )
    ):
        return False
    return (H // 2 - 6) // 2 >= 4


def _phase_major(n: int) -> np.ndarray:
    """Offsets (row, col) of a 2n x 2n window ordered (row phase, col phase, cell row, cell col):
    the four members of every 2x2 pooling cell sit n*n apart, so a pool is 3 elementwise maxima."""
    ph_r, ph_c, cr, cc = np.meshgrid(np.arange(2), np.arange(2), np.arange(n), np.arange(n), indexing="ij")
    return (2 * cr + ph_r).reshape(-1), (2 * cc + ph_c).reshape(-1)


@lru_cache(maxsize=8)
def _geometry(C: int, S: int, c1: int, c2: int):
    """Index tables of the windows for input side S (a multiple of 4).

    Pixels are grouped by ``(r // 2 % 2, c // 2 % 2)`` (the "q class": where the conv2 frame sits
    in its pool-aligned window) and ``(r % 2, c % 2)`` (the "p class": where the kernel sits in
    its pool-aligned conv1 window); within a class every window has the same shape and offset.
    Out-of-range rows and columns are padding filled with -inf (a max-pool then ignores them).
    """
    H1 = S - 4
    H3 = H1 // 2 - 4
    H4 = H3 // 2
    P1, P3 = H1 + 8, H3 + 12  # padded conv1 / conv2 maps (pad 4 / 6 on each side: even)
    n4 = S // 4
    qr, qc, pr, pc, i, j = np.meshgrid(*[np.arange(2)] * 4, np.arange(n4), np.arange(n4), indexing="ij")
    r = (4 * i + 2 * qr + pr).reshape(4, -1)  # (q class, 4 p classes x n4^2 pixels)
    c = (4 * j + 2 * qc + pc).reshape(4, -1)
    w6r, w6c = _phase_major(3)
    w8r, w8c = _phase_major(4)
    # conv1 window: padded rows r - (r % 2) .. + 5
    idx_a = (r - r % 2)[..., None] + w6r, (c - c % 2)[..., None] + w6c
    idx_a = idx_a[0] * P1 + idx_a[1]  # (4, npix, 36)
    # conv2 window: padded rows (r // 2) - (r // 2 % 2) .. + 7
    q0r, q0c = r // 2 - (r // 2) % 2, c // 2 - (c // 2) % 2
    idx_q = (q0r[..., None] + w8r) * P3 + (q0c[..., None] + w8c)  # (4, npix, 64)
    # pooled-2 cells of that window: original rows q0 / 2 + k - 3
    k4r, k4c = [a.reshape(-1) for a in np.meshgrid(np.arange(4), np.arange(4), indexing="ij")]
    tr, tc = (q0r // 2)[..., None] + k4r - 3, (q0c // 2)[..., None] + k4c - 3
    ok = (tr >= 0) & (tr < H4) & (tc >= 0) & (tc < H4)
    idx_r = np.where(ok, tr * H4 + tc, H4 * H4)  # (4, npix, 16), H4*H4 = dummy cell
    # conv1 kernel placed in the window of p class (pr, pc): w1[k, ch, 4 + pr - y, 4 + pc - x]
    pr2, pc2 = np.meshgrid(np.arange(2), np.arange(2), indexing="ij")
    ku = 4 + pr2.reshape(4, 1) - w6r
    kv = 4 + pc2.reshape(4, 1) - w6c
    okT = (ku >= 0) & (ku < _K) & (kv >= 0) & (kv < _K)
    kk, ch = np.meshgrid(np.arange(c1), np.arange(C), indexing="ij")  # w1 (c1, C, 5, 5)
    flatT = ((kk.reshape(1, c1, C, 1) * C + ch.reshape(1, c1, C, 1)) * _K + ku[:, None, None]) * _K + kv[:, None, None]
    idx_T = np.where(okT[:, None, None], flatT, c1 * C * _K * _K)  # (4p, c1, C, 36)
    # conv2 change of a 3x3 pooled change (a, b, k) in q class (qr, qc) on the 8x8 window (y, x, o):
    # w2[o, k, a + 4 + qr - y, b + 4 + qc - x]
    a3, b3, k3 = [t.reshape(-1, 1) for t in np.meshgrid(np.arange(3), np.arange(3), np.arange(c1), indexing="ij")]
    y8 = np.repeat(w8r, c2)[None]
    x8 = np.repeat(w8c, c2)[None]
    o8 = np.tile(np.arange(c2), 64)[None]
    idx_G = []
    for q in range(4):
        gu, gv = a3 + 4 + q // 2 - y8, b3 + 4 + q % 2 - x8
        okG = (gu >= 0) & (gu < _K) & (gv >= 0) & (gv < _K)
        idx_G.append(np.where(okG, ((o8 * c1 + k3) * _K + gu) * _K + gv, c2 * c1 * _K * _K))
    t = lambda v: torch.from_numpy(np.ascontiguousarray(v)).long()  # noqa: E731
    return dict(
        H1=H1,
        H3=H3,
        H4=H4,
        P1=P1,
        P3=P3,
        pix=t(r * S + c),
        idx_a=t(idx_a),
        idx_q=t(idx_q),
        idx_r=t(idx_r),
        idx_T=t(idx_T),
        idx_G=t(np.stack(idx_G)),
    )


def _gather_padded(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``w`` (M, ...) flattened with one zero appended, indexed by ``idx`` (any shape)."""
    M = w.shape[0]
    flat = torch.cat([w.reshape(M, -1), w.new_zeros(M, 1)], 1)
    return flat[:, idx.reshape(-1)].reshape(M, *idx.shape)


def _pad_cl(t: torch.Tensor, pad: int) -> torch.Tensor:
    """(M, C, H, W) -> channels-last (M, (H + 2 pad) * (W + 2 pad), C) with -inf padding."""
    M, C, H, W = t.shape
    out = t.new_full((M, H + 2 * pad, W + 2 * pad, C), float("-inf"))
    out[:, pad : pad + H, pad : pad + W] = t.permute(0, 2, 3, 1)
    return out.reshape(M, -1, C)


def _pool4(t: torch.Tensor, dim: int) -> torch.Tensor:
    """relu of the max over the 4 phase blocks of dimension ``dim`` (phase-major windows)."""
    a, b, c, d = t.chunk(4, dim)
    return torch.maximum(torch.maximum(a, b), torch.maximum(c, d)).clamp_min_(0)


def _head(p: dict, R: torch.Tensor) -> torch.Tensor:
    """fc1-relu-fc2-relu-fc3 of M networks on their own rows: R (M, N, F) -> (M, N)."""
    o = R
    for layer, act in (("fc1", True), ("fc2", True), ("fc3", False)):
        w, b = p[f"{layer}.weight"], p[f"{layer}.bias"]
        o = linear(o, w, b)
        if act:
            o = o.clamp_min_(0)
    return o[..., 0]


def lenet_secant(params: dict, x: torch.Tensor, step: float, p_per_step: int = 4) -> torch.Tensor:
    """Secant sensitivities ``(f(x + h e_i) - f(x - h e_i)) / 2h`` of M LeNets (stacked
    ``params``) at ``x`` (C, S, S), for every coordinate i: float64 (M, C*S*S)."""
    w1, w2 = params["conv1.weight"], params["conv2.weight"]
    M, c1, C = w1.shape[0], w1.shape[1], x.shape[0]
    c2, S = w2.shape[1], x.shape[-1]
    g = {k: (v.to(x.device) if torch.is_tensor(v) else v) for k, v in _geometry(C, S, c1, c2).items()}
    H4 = g["H4"]
    with torch.no_grad():
        a = F.conv2d(x[None], w1.reshape(-1, *w1.shape[2:]), params["conv1.bias"].reshape(-1))
        a = a.reshape(M, c1, *a.shape[-2:])
        P0 = F.relu(F.max_pool2d(a, 2))
        Q0 = F.conv2d(
            P0.reshape(1, M * c1, *P0.shape[-2:]),
            w2.reshape(-1, *w2.shape[2:]),
            params["conv2.bias"].reshape(-1),
            groups=M,
        ).reshape(M, c2, g["H3"], g["H3"])
        R0 = F.relu(F.max_pool2d(Q0, 2)).permute(0, 2, 3, 1).reshape(M, H4 * H4, c2)
        R0 = torch.cat([R0, R0.new_zeros(M, 1, c2)], 1)  # + dummy cell
        apad, qpad = _pad_cl(a, 4), _pad_cl(Q0, 6)
        T = step * _gather_padded(w1, g["idx_T"])  # (M, 4p, c1, C, 36)
        T = T.permute(0, 1, 3, 4, 2)  # (M, 4p, C, 36, c1)
        G = _gather_padded(w2, g["idx_G"].transpose(1, 2))  # (M, 4q, 64*c2, 9*c1)
        # fc1 weight in the channels-last cell order of R, with a zero row for the dummy cell
        W1 = params["fc1.weight"]
        W1 = W1.reshape(M, W1.shape[1], c2, H4 * H4).transpose(2, 3)
        W1 = torch.cat([W1, W1.new_zeros(M, W1.shape[1], 1, c2)], 2).reshape(M, W1.shape[1], -1)
        head = dict(params, **{"fc1.weight": W1})
        npix = g["pix"].shape[1]  # pixels per q class
        n = npix // 4  # pixels per (q, p) class
        ps = max(1, min(4, int(p_per_step)))
        out = x.new_empty(M, 2, C, S * S)
        for q in range(4):
            for p0 in range(0, 4, ps):
                pp = min(ps, 4 - p0)
                sel = slice(p0 * n, (p0 + pp) * n)
                k = pp * n
                aw = apad[:, g["idx_a"][q, sel].reshape(-1)].reshape(M, pp, n, 1, 4, 9, c1)
                base = _pool4(aw, 4)  # (M, pp, n, 1, 1, 9, c1)
                hT = T[:, p0 : p0 + pp, None].reshape(M, pp, 1, C, 4, 9, c1)
                dP = torch.stack([_pool4(aw + hT, 4) - base, _pool4(aw - hT, 4) - base], 1)
                rows = 2 * k * C
                dP = dP.reshape(M, rows, 9 * c1)  # rows (sign, p, n, ch)
                Qw = linear(dP, G[:, q]).reshape(M, 2, k, C, 64 * c2)
                Qw += qpad[:, g["idx_q"][q, sel].reshape(-1)].reshape(M, 1, k, 1, 64 * c2)
                Rw = _pool4(Qw.reshape(M, rows, 4, 16 * c2), 2).reshape(M, rows, 16, c2)
                R = R0[:, None].expand(M, rows, H4 * H4 + 1, c2).clone()
                cells = g["idx_r"][q, sel].reshape(1, k, 1, 16).expand(2, k, C, 16).reshape(rows, 16)
                R[:, torch.arange(rows, device=x.device)[:, None], cells] = Rw
                f = _head(head, R.reshape(M, rows, -1)).reshape(M, 2, k, C).transpose(2, 3)
                out[:, :, :, g["pix"][q, sel]] = f
    out = out.reshape(M, 2, -1).double()
    return (out[:, 0] - out[:, 1]) / (2.0 * step)


def lenet_gradients(params: dict, x: torch.Tensor) -> torch.Tensor:
    """Exact input gradients ``grad_x f(x)`` of M LeNets (stacked ``params``) at ``x`` (C, S, S):
    float64 (M, C*S*S). Autograd runs from the output back to the first convolution's output
    (one tensor for all networks, channels-last); the first convolution and its transpose (the
    last step) run outside autograd. On the CPU in float32, nadcore.kernels.native's kernel instead
    (one network at a time, start to end, in one thread; the same numbers up to float rounding)."""
    if native.takes_lenet_input_gradients(params, x):
        return native.lenet_input_gradients(params, x)
    w1, w2 = params["conv1.weight"], params["conv2.weight"]
    M, c1, C = w1.shape[0], w1.shape[1], x.shape[0]
    S = x.shape[-1]
    cl = torch.channels_last
    with torch.no_grad():
        # the input is shared: the first convolution of all networks is one matrix product of its
        # patches, (positions, C*25) x (C*25, M*c1), which is the channels-last layout
        cols = F.unfold(x[None], _K)[0].T  # (h1*h1, C*25)
        h1 = S - _K + 1
        a = linear(cols, w1.reshape(M * c1, -1), params["conv1.bias"].reshape(-1))
        a = a.reshape(1, h1, h1, M * c1).permute(0, 3, 1, 2)  # (1, M*c1, h1, h1), channels-last
    with torch.enable_grad():
        a.requires_grad_(True)
        P = F.relu(F.max_pool2d(a, 2))
        Q = F.conv2d(
            P, w2.reshape(-1, *w2.shape[2:]).contiguous(memory_format=cl), params["conv2.bias"].reshape(-1), groups=M
        )
        R = F.relu(F.max_pool2d(Q, 2)).reshape(M, 1, -1)  # each network's NCHW flatten
        (da,) = torch.autograd.grad(_head(params, R).sum(), a)
    with torch.no_grad():
        g = F.conv_transpose2d(da.contiguous(), w1.reshape(M * c1, C, _K, _K), groups=M)
    return g.reshape(M, -1).double()
