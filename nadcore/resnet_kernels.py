"""Exact faster secant for the CIFAR ResNet-18: the first stage is computed on crops.

Same numbers as :func:`nadcore.estimators.input_sensitivity_secant` on a
:class:`nadcore.models.ResNet18` up to float rounding (tests/test_estimators.py). A perturbation
``x +- h e_i`` of one pixel changes the stem's output (a 3x3 convolution) only within 1 pixel of
``i``, and every 3x3 convolution of the first stage (four, all stride 1) widens the changed region
by one pixel: the first stage's output differs from the unperturbed one only within 5 pixels of
``i`` (an 11x11 window). So the stem and the first stage run without padding on a 21x21 crop of
the perturbed input around ``i`` (out-of-image positions are zero, as the padding of the full
network makes them, and are zeroed again after every layer), the resulting 11x11 window is pasted
into the unperturbed first-stage output, and the remaining stages run on the full maps as usual.
The first stage, about 27% of ResNet-18's multiply-adds on a 32x32 input, shrinks to a fifth.
Every batch norm (eval mode) is folded into the convolution before it.
"""
from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache

import torch
import torch.nn.functional as F

__all__ = ["resnet_supported", "resnet_secant"]

_R = 5  # radius of the changed region after the stem and the four first-stage convolutions


def _conv3(c) -> bool:
    return (c.kernel_size == (3, 3) and c.stride == (1, 1) and c.padding == (1, 1) and c.bias is None
            and c.dilation == (1, 1) and c.groups == 1)


def resnet_supported(model, input_shape) -> bool:
    """True for a registry ResNet18 whose stem and first-stage blocks are stride-1 3x3
    convolutions with identity shortcuts, on a square input."""
    from nadcore.models import ResNet18

    if type(model) is not ResNet18 or len(input_shape) != 3 or input_shape[1] != input_shape[2]:
        return False
    return _conv3(model.conv1) and all(_conv3(b.conv1) and _conv3(b.conv2) and len(b.shortcut) == 0
                                       for b in model.layer1)


@lru_cache(maxsize=4)
def _tables(C: int, S: int, device: str):
    """Unfold index of the 21x21 crops, their in-image masks, and the paste index of the 11x11
    windows in the first-stage map padded by 5."""
    W = 2 * 2 * _R + 1                                               # 21
    canvas = torch.zeros(1, 1, S + 4 * _R, S + 4 * _R)
    canvas[..., 2 * _R:2 * _R + S, 2 * _R:2 * _R + S] = 1
    mask = F.unfold(canvas, W)[0].T.reshape(S * S, 1, W, W)          # (S*S pixels, 1, 21, 21)
    r = torch.arange(S)
    w = torch.arange(2 * _R + 1)
    P = S + 2 * _R
    rows = (r[:, None, None, None] + w[None, None, :, None]) * P
    cols = r[None, :, None, None] + w[None, None, None, :]
    paste = (rows + cols).reshape(S * S, -1)                         # (S*S, 121) into P*P
    return mask.to(device), paste.to(device)


def _fold(conv, bn):
    """Weight and bias of ``bn(conv(.))`` in eval mode as one convolution (float rounding aside)."""
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    w = (conv.weight * s.reshape(-1, 1, 1, 1)).contiguous(memory_format=torch.channels_last)
    return w, bn.bias - bn.running_mean * s


def _folded(model) -> dict:
    """Every convolution of ``model`` with its batch norm folded in, by block."""
    f = {"stem": _fold(model.conv1, model.bn1)}
    for li, layer in enumerate((model.layer1, model.layer2, model.layer3, model.layer4)):
        for bi, b in enumerate(layer):
            f[li, bi] = (_fold(b.conv1, b.bn1), _fold(b.conv2, b.bn2), b.conv1.stride,
                         _fold(b.shortcut[0], b.shortcut[1]) if len(b.shortcut) else None)
    return f


def _block(fb, o, pad=1, mask=None):
    """A BasicBlock with folded weights: padded (the full maps), or without padding on crops
    (``pad=0``: (n, c, s, s) -> (n, c, s - 4, s - 4), zeroed outside the image by ``mask``)."""
    (w1, b1), (w2, b2), stride, sc = fb
    y = F.relu(F.conv2d(o, w1, b1, stride, pad))
    if mask is not None:
        y = y * mask[..., 1:-1, 1:-1]
    y = F.conv2d(y, w2, b2, 1, pad)
    y += F.conv2d(o, sc[0], sc[1], stride) if sc is not None else (o if pad else o[..., 2:-2, 2:-2])
    y = y.relu_()
    return y * mask[..., 2:-2, 2:-2] if mask is not None else y


def _tail(model, f, o):
    for li, layer in ((1, model.layer2), (2, model.layer3), (3, model.layer4)):
        for bi in range(len(layer)):
            o = _block(f[li, bi], o)
    if model.pooling:
        o = F.avg_pool2d(o, 4)
    return model.linear(o.flatten(1)).reshape(-1)


def resnet_secant(model, x: torch.Tensor, step: float, chunk: int | None = None,
                  precision: str = "float32", coords=None) -> torch.Tensor:
    """``(f(x + h e_i) - f(x - h e_i)) / 2h`` of a ResNet18 (eval mode) for every coordinate i of
    ``x`` (C, S, S), or for the flat indices ``coords`` only: float64 (C*S*S,) or (len(coords),).
    ``chunk`` perturbed inputs per pass (128 on a CPU, all on a GPU); ``precision="bf16"`` runs
    under bfloat16 autocast."""
    from nadcore.estimators import _autocast

    C, S = x.shape[0], x.shape[-1]
    dev = x.device
    coords = torch.arange(C * S * S, device=dev) if coords is None else torch.as_tensor(coords, device=dev)
    D = len(coords)
    chunk = chunk or (2 * D if dev.type != "cpu" else 128)
    mask, paste = _tables(C, S, str(dev))
    W, P = 4 * _R + 1, S + 2 * _R
    cl = torch.channels_last
    out = torch.empty(2, D, dtype=torch.float64, device=dev)
    with torch.no_grad(), (_autocast(dev.type, precision) if precision != "float32" else nullcontext()):
        f = _folded(model)
        base = F.relu(F.conv2d(x[None], *f["stem"], 1, 1))
        for bi in range(len(model.layer1)):
            base = _block(f[0, bi], base)                                # (1, c, S, S)
        c = base.shape[1]
        base_pad = F.pad(base, (_R,) * 4).permute(0, 2, 3, 1).reshape(1, P * P, c)
        crops = F.unfold(F.pad(x[None], (2 * _R,) * 4), W)[0].T.reshape(S * S, C, W, W)
        k = torch.arange(2 * D, device=dev)
        for s in range(0, 2 * D, chunk):
            i = k[s:s + chunk]
            sign = 1.0 - 2.0 * (i >= D).to(x.dtype)
            coord = coords[i % D]
            pix, ch = coord % (S * S), coord // (S * S)
            t = crops[pix].clone()
            t[torch.arange(len(i), device=dev), ch, 2 * _R, 2 * _R] += sign * step
            m = mask[pix].to(t.dtype)
            t = F.relu(F.conv2d(t, *f["stem"])) * m[..., 1:-1, 1:-1]
            for bi in range(len(model.layer1)):
                e = (W - t.shape[-1]) // 2
                t = _block(f[0, bi], t, 0, m[..., e:W - e, e:W - e])
            full = base_pad.to(t.dtype).expand(len(i), P * P, c).clone()
            full[torch.arange(len(i), device=dev)[:, None], paste[pix]] = t.permute(0, 2, 3, 1).reshape(
                len(i), -1, c)
            full = full.reshape(len(i), P, P, c)[:, _R:_R + S, _R:_R + S].permute(0, 3, 1, 2)
            out.view(-1)[s:s + len(i)] = _tail(model, f, full.contiguous(memory_format=cl)).double()
    return (out[0] - out[1]) / (2.0 * step)
