"""Exact faster secant for the CIFAR ResNet-18: the first stage is computed on crops.

Same numbers as :func:`nadcore.nads.estimators.input_sensitivity_secant` on a
:class:`nadcore.nets.ResNet18` up to float rounding (tests/test_kernels.py). A perturbation
``x +- h e_i`` of one pixel changes the stem's output (a 3x3 convolution) only within 1 pixel of
``i``, and every 3x3 convolution of the first stage (four, all stride 1) widens the changed region
by one pixel: the first stage's output differs from the unperturbed one only within 5 pixels of
``i`` (an 11x11 window). So the stem and the first stage run without padding on a 21x21 crop of
the perturbed input around ``i`` (out-of-image positions are zero, as the padding of the full
network makes them, and are zeroed again after every layer), the resulting 11x11 window is pasted
into the unperturbed first-stage output, and the remaining stages run on the full maps as usual.
The first stage, about 27% of ResNet-18's multiply-adds on a 32x32 input, shrinks to a fifth.

The first block of the second stage works the same way: its first convolution (stride 2) and the
1x1 shortcut change their outputs only within 3 cells of ``i / 2`` on the 16x16 map, its second
convolution within 4, so it runs without padding on a 23x23 crop of the unperturbed first-stage
map with the 11x11 window written into it (no full first-stage map is built per input) and
yields a 9x9 window (at most 8 changed rows and columns) that is pasted into the block's
unperturbed output; the rest of the network runs on full maps. Every batch norm (eval mode) is
folded into the convolution before it.

Two more exact savings in the remaining stages (:func:`_conv`). On the CPU, on maps of at most
4x4 (the last stage), where a padded 3x3 convolution spends almost a third of its multiply-adds
on the zero padding, it runs as nine matrix products, one per class of output positions (corner,
edge, interior) with only the kernel taps that land inside the map (:func:`nadcore.kernels.cpu.linear`:
oneDNN's product on the CPU in float32). On the CPU in float32, a
convolution followed by its ReLU (and by the residual sum) is one oneDNN call with fused
post-operations (``torch.ops.mkldnn._convolution_pointwise``, the op torch.compile uses), which
saves a pass over every activation map; other devices and dtypes run the separate ops.
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F

from nadcore.kernels.cpu import linear, onednn_applies
from nadcore.kernels.precision import precision_mode
from nadcore.nets.architectures import ResNet18

__all__ = ["resnet_supported", "resnet_secant"]

_R = 5  # radius of the changed region after the stem and the four first-stage convolutions


def _conv3(c) -> bool:
    return (
        c.kernel_size == (3, 3)
        and c.stride == (1, 1)
        and c.padding == (1, 1)
        and c.bias is None
        and c.dilation == (1, 1)
        and c.groups == 1
    )


def resnet_supported(model, input_shape) -> bool:
    """True for a registry ResNet18 whose stem and first-stage blocks are stride-1 3x3
    convolutions with identity shortcuts and whose second stage starts with a stride-2 3x3
    convolution and a 1x1 stride-2 shortcut, on a square input."""
    if type(model) is not ResNet18 or len(input_shape) != 3 or input_shape[1] != input_shape[2]:
        return False
    b2 = model.layer2[0]
    down = (
        b2.conv1.kernel_size == (3, 3)
        and b2.conv1.stride == (2, 2)
        and b2.conv1.padding == (1, 1)
        and _conv3(b2.conv2)
        and len(b2.shortcut) == 2
        and b2.shortcut[0].kernel_size == (1, 1)
        and b2.shortcut[0].stride == (2, 2)
        and b2.shortcut[0].padding == (0, 0)
    )
    return (
        down
        and _conv3(model.conv1)
        and all(_conv3(b.conv1) and _conv3(b.conv2) and len(b.shortcut) == 0 for b in model.layer1)
    )


def _window(starts, size: int, side: int):
    """Flat positions in a side x side map of the size x size windows starting at ``starts``
    (rows, cols: one pair per pixel), -1 outside the map."""
    w = torch.arange(size)
    rows = (starts[0][:, None, None] + w[None, :, None]).expand(-1, size, size)
    cols = (starts[1][:, None, None] + w[None, None, :]).expand(-1, size, size)
    inside = (rows >= 0) & (rows < side) & (cols >= 0) & (cols < side)
    return torch.where(inside, rows * side + cols, -1).reshape(len(starts[0]), -1)


@lru_cache(maxsize=4)
def _tables(C: int, S: int, device: str):
    """Per input pixel (row-major): in-image masks of the 21x21 input crops; its 23x23 crop of
    the first-stage map (flat positions, ``S*S`` outside: a row of zeros); where its 11x11
    first-stage window lands in that crop; the in-map mask of the 11x11 output of the second
    stage's first convolution; where its 9x9 window lands in the second-stage map (flat
    positions, -1 outside)."""
    W = 2 * 2 * _R + 1  # 21
    S2 = (S + 1) // 2
    r, c = torch.arange(S).repeat_interleave(S), torch.arange(S).repeat(S)
    mask = (_window((r - 2 * _R, c - 2 * _R), W, S) >= 0).float().reshape(S * S, 1, W, W)
    a, b = r // 2 - 4, c // 2 - 4  # the 9x9 window's corner
    crop2 = _window((2 * a - 3, 2 * b - 3), 23, S)  # (S*S, 529)
    crop2 = torch.where(crop2 >= 0, crop2, S * S)
    inner = _window((r - _R - (2 * a - 3), c - _R - (2 * b - 3)), 2 * _R + 1, 23)  # (S*S, 121)
    mask2 = (_window((a - 1, b - 1), 11, S2) >= 0).float().reshape(S * S, 1, 11, 11)
    paste2 = _window((a, b), 9, S2)  # (S*S, 81)
    return tuple(t.to(device) for t in (mask, crop2, inner, mask2, paste2))


def _fold(conv, bn):
    """Weight and bias of ``bn(conv(.))`` in eval mode as one convolution (float rounding aside)."""
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    w = (conv.weight * s.reshape(-1, 1, 1, 1)).contiguous(memory_format=torch.channels_last)
    return w, bn.bias - bn.running_mean * s


def _folded(model, S: int) -> dict:
    """Every convolution of ``model`` with its batch norm folded in, by block; the stride-1 3x3
    convolutions of maps of side at most ``_TAP_MAX`` (input side ``S``) also carry their
    tap-class weights (:func:`_conv_taps`)."""

    def taps(wb, side):
        return (*wb, (side, _tap_weights(wb[0], side))) if 2 <= side <= _TAP_MAX else wb

    f = {"stem": _fold(model.conv1, model.bn1)}
    for li, layer in enumerate((model.layer1, model.layer2, model.layer3, model.layer4)):
        for bi, b in enumerate(layer):
            stride = b.conv1.stride[0]
            side = -(-S // 2**li)  # the block's output side
            f[li, bi] = (
                taps(_fold(b.conv1, b.bn1), side) if stride == 1 else _fold(b.conv1, b.bn1),
                taps(_fold(b.conv2, b.bn2), side),
                stride,
                _fold(b.shortcut[0], b.shortcut[1]) if len(b.shortcut) else None,
            )
    return f


_TAP_MAX = 4  # maps of at most this side run the padded 3x3 convolutions as tap-class products


def _tap_classes(S: int):
    """Per axis of an S-map (3x3 kernel, stride 1, padding 1): (input slice, taps, kernel slice,
    output slice) of the first, the inner and the last output positions."""
    cls = [(slice(0, 2), 2, slice(1, 3), slice(0, 1))]
    if S > 2:
        cls.append((slice(0, S), 3, slice(0, 3), slice(1, S - 1)))
    cls.append((slice(S - 2, S), 2, slice(0, 2), slice(S - 1, S)))
    return cls


def _tap_weights(w: torch.Tensor, S: int) -> list:
    """For each (row class, column class): the kernel taps inside the map as a (C', taps * C)
    matrix, columns in (kernel row, kernel column, input channel) order."""
    return [
        [w[:, :, kr, kc].permute(0, 2, 3, 1).reshape(w.shape[0], -1).contiguous() for (_, _, kc, _) in _tap_classes(S)]
        for (_, _, kr, _) in _tap_classes(S)
    ]


def _conv_taps(o, wb, taps):
    """A padded stride-1 3x3 convolution of a small map (n, C, S, S) as one matrix product per
    class of output positions, using only the taps that land inside the map."""
    n, _, S, _ = o.shape
    b = wb[1]
    xv = o.permute(0, 2, 3, 1)  # (n, S, S, C)
    out = o.new_empty(n, S, S, b.shape[0])
    classes = _tap_classes(S)
    for i, (ri, kh, _, ro) in enumerate(classes):
        rows = xv[:, ri].unfold(1, kh, 1)  # (n, r, S, C, kh)
        for j, (ci, kw, _, co) in enumerate(classes):
            p = rows[:, :, ci].unfold(2, kw, 1)  # (n, r, c, C, kh, kw)
            nr, nc = p.shape[1], p.shape[2]
            cols = p.permute(0, 1, 2, 4, 5, 3).reshape(n * nr * nc, -1)
            out[:, ro, co] = linear(cols, taps[i][j], b).view(n, nr, nc, -1)
    return out.permute(0, 3, 1, 2)


def _conv(o, wb, stride=1, pad=1, relu=False, add=None):
    """``conv2d(o, *wb, stride, pad)`` [``+ add``] [then ReLU]: tap-class products on small maps
    (``wb`` carries their weights), oneDNN's fused post-operations on the CPU in float32, the
    separate ops otherwise (all equal up to float rounding)."""
    taps = wb[2] if len(wb) > 2 else None
    if taps is not None and stride == 1 and pad == 1 and o.shape[-1] == taps[0] and o.device.type == "cpu":
        y = _conv_taps(o, wb, taps[1])
    elif onednn_applies(o) and (add is None or add.is_contiguous(memory_format=torch.channels_last)):
        args = (wb[0], wb[1], [pad] * 2, [stride] * 2, [1, 1], 1)
        if add is None:
            return torch.ops.mkldnn._convolution_pointwise(o, *args, "relu" if relu else "none", [], "")
        return torch.ops.mkldnn._convolution_pointwise.binary(
            o, add, *args, "add", None, "relu" if relu else None, [], ""
        )
    else:
        y = F.conv2d(o, wb[0], wb[1], stride, pad)
    if add is not None:
        y = y + add
    return y.relu_() if relu else y


def _block(fb, o, pad=1, mask=None):
    """A BasicBlock with folded weights: padded (the full maps), or without padding on crops
    (``pad=0``: (n, c, s, s) -> (n, c, s - 4, s - 4), zeroed outside the image by ``mask``)."""
    c1, c2, stride, sc = fb
    y = _conv(o, c1, stride, pad, relu=True)
    if mask is not None:
        y = y * mask[..., 1:-1, 1:-1]
    r = (
        _conv(o, sc, stride, 0)
        if sc is not None
        else (o if pad else o[..., 2:-2, 2:-2].contiguous(memory_format=torch.channels_last))
    )
    y = _conv(y, c2, 1, pad, relu=True, add=r)
    return y * mask[..., 2:-2, 2:-2] if mask is not None else y


def _tail(model, f, o):
    """The network from the second block of the second stage on."""
    for li, layer in ((1, model.layer2), (2, model.layer3), (3, model.layer4)):
        for bi in range(1 if li == 1 else 0, len(layer)):
            o = _block(f[li, bi], o)
    if model.pooling:
        o = F.avg_pool2d(o, 4)
    return model.linear(o.flatten(1)).reshape(-1)


def _pasted(base: torch.Tensor, win: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """n copies of the map ``base`` (1, c, s, s) with each input's window ``win`` (n, c, w, w)
    written at the flat positions ``at`` (n, w*w; -1: outside the map, dropped): (n, c, s, s)
    channels-last."""
    n, c, s = len(win), base.shape[1], base.shape[-1]
    buf = win.new_empty(n * s * s + 1, c)  # the last row: a sink
    buf[:-1].view(n, s * s, c).copy_(base.permute(0, 2, 3, 1).reshape(1, s * s, c).to(win.dtype))
    k = torch.arange(n, device=at.device)[:, None]
    buf[torch.where(at >= 0, at + s * s * k, n * s * s).reshape(-1)] = win.permute(0, 2, 3, 1).reshape(-1, c)
    return buf[:-1].view(n, s, s, c).permute(0, 3, 1, 2)


def _crops(rows: torch.Tensor, at: torch.Tensor, win: torch.Tensor, inner: torch.Tensor, w: int) -> torch.Tensor:
    """The w x w crops of a map given as ``rows`` ((s*s + 1, c): its channels-last cells, then a
    row of zeros) at the flat positions ``at`` (n, w*w; ``s*s``: outside the map, read as zero),
    each with its input's window ``win`` (n, c, v, v) written at the flat crop positions
    ``inner`` (n, v*v): (n, c, w, w) channels-last."""
    n, c = len(at), rows.shape[1]
    out = rows.to(win.dtype)[at]  # (n, w*w, c)
    out[torch.arange(n, device=at.device)[:, None], inner] = win.permute(0, 2, 3, 1).reshape(n, -1, c)
    return out.view(n, w, w, c).permute(0, 3, 1, 2)


def resnet_secant(
    model, x: torch.Tensor, step: float, chunk: int | None = None, precision: str = "float32", coords=None
) -> torch.Tensor:
    """``(f(x + h e_i) - f(x - h e_i)) / 2h`` of a ResNet18 (eval mode) for every coordinate i of
    ``x`` (C, S, S), or for the flat indices ``coords`` only: float64 (C*S*S,) or (len(coords),).
    ``chunk`` perturbed inputs per pass (128 on a CPU, all on a GPU); ``precision``: see
    :func:`nadcore.kernels.precision.precision_mode`."""
    C, S = x.shape[0], x.shape[-1]
    dev = x.device
    coords = torch.arange(C * S * S, device=dev) if coords is None else torch.as_tensor(coords, device=dev)
    D = len(coords)
    chunk = chunk or (2 * D if dev.type != "cpu" else 128)
    mask, crop2, inner, mask2, paste2 = _tables(C, S, str(dev))
    W = 4 * _R + 1
    out = torch.empty(2, D, dtype=torch.float64, device=dev)
    with torch.no_grad(), precision_mode(dev.type, precision):
        f = _folded(model, S)
        base = F.relu(F.conv2d(x[None], *f["stem"], 1, 1))
        for bi in range(len(model.layer1)):
            base = _block(f[0, bi], base)  # (1, c, S, S)
        base2 = _block(f[1, 0], base)  # (1, c2, S2, S2)
        rows = torch.cat([base[0].permute(1, 2, 0).reshape(S * S, -1), base.new_zeros(1, base.shape[1])])
        crops = F.unfold(F.pad(x[None], (2 * _R,) * 4), W)[0].T.reshape(S * S, C, W, W)
        k = torch.arange(2 * D, device=dev)
        for s in range(0, 2 * D, chunk):
            i = k[s : s + chunk]
            n = len(i)
            sign = 1.0 - 2.0 * (i >= D).to(x.dtype)
            coord = coords[i % D]
            pix, ch = coord % (S * S), coord // (S * S)
            t = crops[pix].clone()
            t[torch.arange(n, device=dev), ch, 2 * _R, 2 * _R] += sign * step
            m = mask[pix].to(t.dtype)
            t = F.relu(F.conv2d(t, *f["stem"])) * m[..., 1:-1, 1:-1]
            for bi in range(len(model.layer1)):
                e = (W - t.shape[-1]) // 2
                t = _block(f[0, bi], t, 0, m[..., e : W - e, e : W - e])
            # second stage, first block, on 23x23 crops of the first-stage map with the window in
            t = _crops(rows, crop2[pix], t, inner[pix], 23)
            (c1, c2, _, sc) = f[1, 0]
            y = _conv(t, c1, 2, 0, relu=True) * mask2[pix].to(t.dtype)  # (n, c2, 11, 11)
            y = _conv(y, c2, 1, 0, relu=True, add=_conv(t[..., 3:20, 3:20], sc, 2, 0))
            out.view(-1)[s : s + n] = _tail(model, f, _pasted(base2, y, paste2[pix])).double()
    return (out[0] - out[1]) / (2.0 * step)
