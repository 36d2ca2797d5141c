"""Checks of a hub model built for the book's inputs (:mod:`nadcore.nets.hub`): patch and window
sizes against the image, the classifier head, layer-scale gains, the output shape."""

from __future__ import annotations

import re

import torch
import torch.nn as nn

from nadcore.nets.hub_calls import ModelSpecError, hint

__all__ = [
    "pair",
    "divisors",
    "precheck",
    "check_geometry",
    "torchvision_swin_grid",
    "LAYER_SCALE",
    "layer_scale_parameters",
    "classifier",
    "check_output",
]


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------
def pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def divisors(n):
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def precheck(kwargs, input_size, spec):
    if "patch_size" in kwargs:
        try:
            ps = [int(p) for p in pair(kwargs["patch_size"])]
        except (TypeError, ValueError):
            raise ModelSpecError(f"patch_size={kwargs['patch_size']!r} in {spec!r} is not an int") from None
        if any(p < 1 or input_size % p for p in ps):
            raise ModelSpecError(
                f"patch_size={kwargs['patch_size']!r} does not divide the image size {input_size} ({spec!r}): "
                f"the patch embedding would drop border pixels. Override patch_size with one of: {divisors(input_size)}."
            )


def check_geometry(model, input_size, kwargs, spec):
    """Patchify stem that drops pixels; Swin windows that do not tile the token grid."""
    stem = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
    if stem is not None:
        k, s, p = stem.kernel_size, stem.stride, stem.padding
        if p == (0, 0) and s[0] > 1 and k == s and input_size % s[0]:
            raise ModelSpecError(
                f"the patch embedding of {spec!r} ({k[0]}x{k[0]} stride {s[0]}) does not divide the image size "
                f"{input_size}: the last {input_size % s[0]} rows and columns would never be seen (zero gradient). "
                f"Override patch_size with one of: {divisors(input_size)}."
            )
    first = True
    for mname, m in model.named_modules():  # timm Swin blocks (window clamped to the grid by timm)
        if hasattr(m, "window_size") and hasattr(m, "input_resolution") and isinstance(m.input_resolution, tuple):
            res, win = pair(m.input_resolution), pair(m.window_size)
            if first and "window_size" in kwargs and any(w > r for w, r in zip(pair(kwargs["window_size"]), res)):
                raise ModelSpecError(
                    f"window_size={kwargs['window_size']!r} is larger than the {res[0]}x{res[1]} token grid of the "
                    f"first stage of {spec!r} (timm would clamp it: global attention, no shifted windows). "
                    f"Override window_size with a divisor of {res[0]}, e.g. window_size={max(1, res[0] // 2)}."
                )
            first = False
            if any(r % w for r, w in zip(res, win)):
                raise ModelSpecError(
                    f"window_size {win[0]} does not tile the {res[0]}x{res[1]} token grid at {mname} of {spec!r} "
                    f"(windows would be padded). Override window_size with a divisor of {res[0]}: {divisors(res[0])}."
                )


def torchvision_swin_grid(model, in_shape, spec):
    """torchvision Swin pads windows silently: check the first stage's grid with a hook."""
    try:
        from torchvision.models.swin_transformer import ShiftedWindowAttention, ShiftedWindowAttentionV2
    except ImportError:
        return []
    blocks = [m for m in model.modules() if isinstance(m, (ShiftedWindowAttention, ShiftedWindowAttentionV2))]
    if not blocks:
        return []
    seen = []
    h = blocks[0].register_forward_pre_hook(lambda mod, inp: seen.append(tuple(inp[0].shape[1:3])))
    return [h, blocks[0], seen]


LAYER_SCALE = re.compile(r"(^|\.)(gamma_?\d?|ls_?\d?|layer_scale_?\d?)(\.(gamma|scale))?$")


def layer_scale_parameters(model):
    """``[(name, parameter), ...]`` of the layer-scale gains of ``model`` (not norm parameters)."""
    found = []
    for mname, mod in model.named_modules():
        if "norm" in type(mod).__name__.lower() or "grn" in type(mod).__name__.lower():
            continue
        for pname, p in mod.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            if LAYER_SCALE.search(full):
                found.append((full, p))
    return found


def classifier(model):
    get = getattr(model, "get_classifier", None)
    if callable(get):
        try:
            head = get()
            if isinstance(head, nn.Module) and getattr(head, "weight", None) is not None:
                return head
        except Exception:
            pass
    last = None
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            last = m
    return last


def check_output(model, in_channels, num_outputs, input_size, spec):
    was_training = model.training
    model.eval()
    swin = torchvision_swin_grid(model, (in_channels, input_size, input_size), spec)
    try:
        p = next(model.parameters(), None)
        x = torch.zeros((2, in_channels, input_size, input_size), device=p.device if p is not None else "cpu")
        with torch.no_grad():
            out = model(x)
    except Exception as e:
        raise ModelSpecError(
            f"model {spec!r} failed on an input of shape (2, {in_channels}, {input_size}, "
            f"{input_size}): {type(e).__name__}: {e}. {hint(str(e))}"
        ) from e
    finally:
        model.train(was_training)
        if swin:
            swin[0].remove()
    if swin and swin[2]:
        grid, win = swin[2][0], pair(swin[1].window_size)
        if any(w > g or g % w for w, g in zip(win, grid)):
            raise ModelSpecError(
                f"window_size {list(win)} of {spec!r} does not tile the {grid[0]}x{grid[1]} token grid of the first "
                f"stage (torchvision would pad it). Override window_size=[w,w] with w one of: {divisors(grid[0])}."
            )
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_outputs):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ModelSpecError(
            f"model {spec!r} returned {shape} for a batch of 2 inputs of shape "
            f"({in_channels}, {input_size}, {input_size}); expected (2, {num_outputs}). "
            "Hint: the model must end in a classifier with num_classes outputs and global pooling "
            "(check global_pool / features_only overrides)."
        )
