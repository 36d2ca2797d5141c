"""Model-hub specs (the book's chapter 7, "A NAD atlas"): ``timm:NAME?k=v&k2=v2`` and ``torchvision:NAME?k=v``.

Self-contained (torch; timm and torchvision imported on demand). Everything is built from
scratch: timm with ``pretrained=False``, torchvision with ``weights=None``; nothing is ever
downloaded.

* :func:`parse_spec` splits a spec into ``(source, name, kwargs)``; values are Python literals
  where they parse as one (ints, floats, tuples, lists, ``True``/``False``/``None``, also
  ``true``/``false``/``none``), strings otherwise.
* :func:`build_hub_model` builds the network for ``in_channels`` x ``input_size`` x ``input_size``
  inputs and ``num_outputs`` outputs, checks its geometry (patch and window sizes) and, by
  default, that a (2, C, S, S) batch gives a (2, num_outputs) output in eval mode.
  The model is returned in the mode its constructor left it in (train); call ``.eval()``.
* :func:`make_factory` wraps a spec as ``factory(in_channels, num_outputs)`` for
  ``nadcore.nets.build_model`` (which runs the factory under a seeded global torch RNG: every
  timm / torchvision initialiser draws from torch's global CPU generator, so a seed fixes the
  network).

timm: ``timm.create_model(NAME, pretrained=False, in_chans=C, num_classes=K, img_size=S, **kw)``
(``img_size`` only where the model accepts it, unless given in the spec). NAME may also be a
model class exported by ``timm.models`` (e.g. ``timm:MlpMixer?patch_size=4&num_blocks=4``),
which is then called directly with the same keywords. Some timm entrypoints fix their
architecture keywords in a way that cannot be overridden (``dict(patch_size=16, **kwargs)`` in
``mixer_s16_224``, ``resmlp_12_224``, ``convmixer_768_32``...); for those, the entrypoint is
re-run with the overridden keywords removed from its fixed ones, so
``timm:mixer_s16_224?patch_size=4&num_blocks=4`` works as the spec reads.

torchvision: ``torchvision.models.get_model(NAME, weights=None, num_classes=K, **kw)`` (plus
``image_size=S`` where the model class takes it, e.g. ViT). The stem convolution (the first
``nn.Conv2d`` taking 3 channels) is replaced by one taking ``in_channels`` with the same
kernel, stride, padding, dilation, groups and bias; its weights are the first ``in_channels``
input-channel slices of the weights the model's own initialiser drew (so the per-weight
distribution is the model's; for ``in_channels > 3`` the extra channels are random
permutations of the drawn weights). Builders that fix keywords (``vit_b_16``'s ``patch_size``,
``swin_t``'s ``window_size``) get the same override treatment as timm entrypoints.

Hub options (keys starting with ``hub_``, consumed here, not passed to the model):
``hub_head_std=0.02`` redraws the classifier head's weight from a truncated normal with that
std (bias 0), for models whose head is zero-initialised (timm MLP-Mixer / ResMLP: their
input gradient at initialisation is otherwise exactly zero). Building such a model without it
emits a :class:`ZeroGradientWarning`.
``hub_layer_scale=1.0`` sets every layer-scale parameter (the per-channel gains on residual
branches: timm ConvNeXt/EdgeNeXt ``gamma``, XCiT ``gamma1``, CaiT ``gamma_1``, ResMLP ``ls1``/``ls2``, ``LayerScale`` modules,
MetaFormer ``layer_scale*.scale``, torchvision ConvNeXt ``layer_scale``) to that value. Their
defaults (1e-6 to 1e-4) make every residual block nearly invisible at initialisation, so the
input gradient is that of the stem/downsampling path alone; prefer the model's own keyword where
it has one (timm ConvNeXt ``ls_init_value``, MetaFormer ``layer_scale_init_values``,
torchvision ConvNeXt ``layer_scale``); ResMLP has none.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import re
import warnings
from urllib.parse import unquote

import torch
import torch.nn as nn

from nadcore.nets.hub_calls import ModelSpecError, accepted_keywords, call_with_overrides, may_take, returned_class
from nadcore.nets.hub_checks import check_geometry, check_output, classifier, layer_scale_parameters, precheck

__all__ = [
    "ModelSpecError",
    "ZeroGradientWarning",
    "DegenerateGradientWarning",
    "layer_scale_parameters",
    "parse_spec",
    "build_hub_model",
    "make_factory",
    "is_hub_spec",
    "library_version",
    "parameter_count",
    "SOURCES",
    "HUB_OPTIONS",
]

SOURCES = ("timm", "torchvision")
HUB_OPTIONS = ("hub_head_std", "hub_layer_scale")
# keys the hub sets itself (per source) or refuses (anything that could load weights)
_OWNED = {
    "timm": {"in_chans": "in_channels", "num_classes": "num_outputs"},
    "torchvision": {"num_classes": "num_outputs"},
}
_FORBIDDEN = {
    "pretrained",
    "pretrained_cfg",
    "pretrained_cfg_overlay",
    "checkpoint_path",
    "cache_dir",
    "weights",
    "weights_backbone",
    "progress",
}


class DegenerateGradientWarning(UserWarning):
    """At initialisation the model's input gradient ignores most of the model: residual branches
    scaled by tiny layer-scale gains, or zero-initialised last BatchNorm gains (``zero_init_last``)."""


class ZeroGradientWarning(DegenerateGradientWarning):
    """The model's input gradient is identically zero at initialisation (zero-initialised head)."""


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------
_WORDS = {"true": True, "false": False, "none": None, "null": None}


def _parse_value(text: str):
    s = unquote(text).strip()
    if s.lower() in _WORDS:
        return _WORDS[s.lower()]
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return s


def parse_spec(spec) -> tuple[str, str, dict]:
    """``"timm:vit_tiny_patch16_224?img_size=32&patch_size=4"`` ->
    ``("timm", "vit_tiny_patch16_224", {"img_size": 32, "patch_size": 4})``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(
            f"model spec must be a non-empty string like 'timm:NAME?k=v' or 'torchvision:NAME', got {spec!r}"
        )
    text = spec.strip()
    source, sep, rest = text.partition(":")
    source = source.strip().lower()
    if not sep:
        raise ModelSpecError(f"model spec {spec!r} names no source: write 'timm:{text}' or 'torchvision:{text}'")
    if source not in SOURCES:
        close = difflib.get_close_matches(source, SOURCES, n=1)
        raise ModelSpecError(
            f"unknown model source {source!r} in {spec!r}; use one of {', '.join(SOURCES)}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
        )
    name, _, query = rest.partition("?")
    name = name.strip()
    if not name:
        raise ModelSpecError(f"model spec {spec!r} has no model name after '{source}:'")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        raise ModelSpecError(
            f"model name {name!r} in {spec!r} is not a plain {source} model name "
            "(hub paths like 'hf-hub:...' and files are not allowed: nothing is downloaded)"
        )
    kwargs: dict = {}
    for part in query.split("&") if query else []:
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ModelSpecError(
                f"bad keyword override {part!r} in {spec!r}: write key=value pairs joined by '&', "
                "e.g. 'timm:vit_tiny_patch16_224?patch_size=4&depth=4'"
            )
        if key in kwargs:
            raise ModelSpecError(f"keyword {key!r} given twice in {spec!r}")
        if not value.strip():
            raise ModelSpecError(f"keyword {key!r} has an empty value in {spec!r}")
        kwargs[key] = _parse_value(value)
    return source, name, kwargs


# --------------------------------------------------------------------------------------------
# timm
# --------------------------------------------------------------------------------------------
def _build_timm(name, kwargs, in_channels, num_outputs, input_size, spec):
    try:
        import timm
        import timm.models
    except ImportError as e:
        raise ModelSpecError(f"{spec!r} needs timm, which is not installed: pip install timm") from e
    args = dict(kwargs, in_chans=in_channels, num_classes=num_outputs)
    retry = ()

    def offer_img_size(cls):  # unless the class plainly has no img_size (then no failed first try)
        nonlocal retry
        if "img_size" not in kwargs and (cls is None or may_take(cls, "img_size")):
            args["img_size"] = input_size
            retry = ("img_size",)

    if timm.is_model(name):
        entry = timm.models.model_entrypoint(name)
        cls = returned_class(entry)
        offer_img_size(cls)

        def fn(**kw):  # pretrained=False: no weights, no download
            return timm.create_model(name, pretrained=False, **kw)

        return call_with_overrides(
            f"timm model {name!r}", fn, cls, args, set(kwargs), spec, retry, entry=entry, fixed={"pretrained": False}
        )
    cls = getattr(timm.models, name, None)
    if inspect.isclass(cls) and issubclass(cls, nn.Module):
        offer_img_size(cls)
        return call_with_overrides(f"timm class {name!r}", cls, cls, args, set(kwargs), spec, retry)
    known = timm.list_models()
    classes = [
        n
        for n in dir(timm.models)
        if n[:1].isupper()
        and inspect.isclass(getattr(timm.models, n))
        and issubclass(getattr(timm.models, n), nn.Module)
    ]
    close = [n for n in known if n.startswith(name)][:4]
    close += [n for n in difflib.get_close_matches(name, known + classes, n=6, cutoff=0.5) if n not in close][
        : 6 - len(close)
    ]
    raise ModelSpecError(
        f"unknown timm model {name!r} (timm {timm.__version__})."
        + (f" Close names: {', '.join(close)}." if close else "")
        + " List them with timm.list_models('*pattern*')."
    )


# --------------------------------------------------------------------------------------------
# torchvision
# --------------------------------------------------------------------------------------------
def _build_torchvision(name, kwargs, in_channels, num_outputs, input_size, spec):
    try:
        import torchvision.models as tvm
    except ImportError as e:
        raise ModelSpecError(f"{spec!r} needs torchvision, which is not installed: pip install torchvision") from e
    known = tvm.list_models(module=tvm)  # classification models
    if name not in known:
        others = tvm.list_models()
        close = [n for n in known if n.startswith(name.lower())][:4]
        close += [n for n in difflib.get_close_matches(name.lower(), known, n=6, cutoff=0.5) if n not in close][
            : 6 - len(close)
        ]
        extra = (
            f" ({name!r} is a torchvision detection/segmentation/video model; only image classifiers are supported.)"
            if name in others
            else ""
        )
        raise ModelSpecError(
            f"unknown torchvision classification model {name!r}."
            + extra
            + (f" Close names: {', '.join(close)}." if close else "")
            + " List them with torchvision.models.list_models(module=torchvision.models)."
        )
    builder = tvm.get_model_builder(name)
    cls = returned_class(builder)
    args = dict(kwargs, num_classes=num_outputs)
    if "image_size" not in kwargs and cls is not None and "image_size" in accepted_keywords(cls):
        args["image_size"] = input_size

    def fn(**kw):
        return builder(weights=None, **kw)

    model = call_with_overrides(
        f"torchvision model {name!r}", fn, cls, args, set(kwargs), spec, entry=builder, fixed={"weights": None}
    )
    if in_channels != 3:
        _replace_stem(model, in_channels, spec)
    return model


def _replace_stem(model: nn.Module, in_channels: int, spec) -> None:
    for mname, mod in model.named_modules():
        if isinstance(mod, nn.Conv2d) and mod.in_channels == 3 and mod.groups == 1:
            new = nn.Conv2d(
                in_channels,
                mod.out_channels,
                mod.kernel_size,
                stride=mod.stride,
                padding=mod.padding,
                dilation=mod.dilation,
                groups=1,
                bias=mod.bias is not None,
                padding_mode=mod.padding_mode,
                device=mod.weight.device,
                dtype=mod.weight.dtype,
            )
            with torch.no_grad():
                w = mod.weight
                if in_channels <= 3:
                    new.weight.copy_(w[:, :in_channels])
                else:  # extra channels: random permutations of the drawn weights (same distribution)
                    reps = [w] + [
                        w.flatten()[torch.randperm(w.numel())].view_as(w) for _ in range((in_channels - 1) // 3)
                    ]
                    new.weight.copy_(torch.cat(reps, 1)[:, :in_channels])
                if mod.bias is not None:
                    new.bias.copy_(mod.bias)
            parent = model.get_submodule(mname.rpartition(".")[0]) if "." in mname else model
            setattr(parent, mname.rpartition(".")[2], new)
            return
    raise ModelSpecError(f"{spec!r}: found no 3-channel nn.Conv2d stem to adapt to {in_channels} input channel(s)")


# --------------------------------------------------------------------------------------------
# Public
# --------------------------------------------------------------------------------------------
def build_hub_model(
    spec, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, *, check: bool = True
) -> nn.Module:
    """Build ``spec`` (``timm:NAME?k=v`` or ``torchvision:NAME?k=v``) from scratch for
    (in_channels, input_size, input_size) inputs and ``num_outputs`` outputs. Parameters are
    drawn from torch's global CPU RNG (seed it, e.g. under ``torch.random.fork_rng``)."""
    source, name, kwargs = parse_spec(spec)
    hub = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("hub_")}
    for k in hub:
        if k not in HUB_OPTIONS:
            close = difflib.get_close_matches(k, HUB_OPTIONS, n=1)
            raise ModelSpecError(
                f"unknown hub option {k!r} in {spec!r}; hub options: {', '.join(HUB_OPTIONS)}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
            )
    for k, v in kwargs.items():
        if k in _FORBIDDEN:
            raise ModelSpecError(
                f"{k}={v!r} in {spec!r}: models are always built from scratch "
                "(pretrained=False / weights=None, nothing is downloaded); remove it."
            )
        if k in _OWNED[source]:
            raise ModelSpecError(
                f"{k} in {spec!r} is set by the hub from {_OWNED[source][k]}; remove it from the spec."
            )
    precheck(kwargs, input_size, spec)
    build = _build_timm if source == "timm" else _build_torchvision
    model = build(name, kwargs, in_channels, num_outputs, input_size, spec)
    if not isinstance(model, nn.Module):
        raise ModelSpecError(f"{spec!r} built a {type(model).__name__}, not a torch.nn.Module")
    check_geometry(model, input_size, kwargs, spec)
    head = classifier(model)
    if "hub_head_std" in hub:
        std = hub["hub_head_std"]
        if not isinstance(std, (int, float)) or isinstance(std, bool) or std <= 0:
            raise ModelSpecError(f"hub_head_std must be a positive number, got {std!r} in {spec!r}")
        if head is None:
            raise ModelSpecError(f"{spec!r}: found no classifier head to reinitialise for hub_head_std")
        with torch.no_grad():
            nn.init.trunc_normal_(head.weight, std=float(std), a=-2 * float(std), b=2 * float(std))
            if head.bias is not None:
                head.bias.zero_()
    elif head is not None and not torch.any(head.weight != 0):
        warnings.warn(
            f"{spec!r}: the classifier head is initialised to zero, so the output is constant and the "
            "input gradient is identically zero at initialisation (no NADs). Add hub_head_std=0.02 to the "
            "spec to draw the head from a truncated normal.",
            ZeroGradientWarning,
            stacklevel=2,
        )
    if "hub_layer_scale" in hub:
        v = hub["hub_layer_scale"]
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ModelSpecError(f"hub_layer_scale must be a number, got {v!r} in {spec!r}")
        params = layer_scale_parameters(model)
        if not params:
            raise ModelSpecError(f"{spec!r} has no layer-scale parameters for hub_layer_scale to set; remove it")
        with torch.no_grad():
            for _, p in params:
                p.fill_(float(v))
    _warn_degenerate(model, spec)
    if check:
        check_output(model, in_channels, num_outputs, input_size, spec)
    return model


_LS_KEYWORDS = ("ls_init_value", "layer_scale_init_values", "layer_scale_init_value", "init_values", "layer_scale")


def _warn_degenerate(model, spec):
    small = [n for n, p in layer_scale_parameters(model) if float(p.detach().abs().max()) <= 1e-3]
    if small:
        ok = [k for k in _LS_KEYWORDS if k in accepted_keywords(type(model))]
        fix = f"{ok[0]}=1.0" if ok else "hub_layer_scale=1.0"
        warnings.warn(
            f"{spec!r}: {len(small)} layer-scale gains (e.g. {small[0]}) are initialised at <= 1e-3, so the "
            "residual blocks are nearly invisible to the input gradient at initialisation (it is that of "
            f"the stem/downsampling path). Add {fix} to the spec to give the blocks their weight.",
            DegenerateGradientWarning,
            stacklevel=3,
        )
    zero_bn = [
        n
        for n, m in model.named_modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.weight is not None and not torch.any(m.weight != 0)
    ]
    if zero_bn:
        ok = [k for k in ("zero_init_last", "zero_init_residual") if k in accepted_keywords(type(model))]
        fix = (
            f"Add {ok[0]}=False to the spec."
            if ok
            else f"{type(model).__name__} has no keyword to turn this off (e.g. timm LeViT zero-initialises its residual "
            "BatchNorms); prefer another model for NADs at initialisation."
        )
        warnings.warn(
            f"{spec!r}: {len(zero_bn)} BatchNorm gains (e.g. {zero_bn[0]}) are initialised to zero, so those "
            "residual branches output zero and the input gradient flows only through the shortcuts (with "
            f"strided 1x1 shortcuts most input pixels get exactly zero gradient). {fix}",
            DegenerateGradientWarning,
            stacklevel=3,
        )


def is_hub_spec(spec) -> bool:
    """True for ``"timm:..."`` and ``"torchvision:..."`` strings (any case)."""
    return isinstance(spec, str) and spec.strip().partition(":")[0].strip().lower() in SOURCES and ":" in spec


def library_version(spec) -> str:
    """``"timm 1.0.31"`` / ``"torchvision 0.29.1"``: the library that builds ``spec`` (part of a
    cache key: another version may build another network); "not installed" when it is missing."""
    source = parse_spec(spec)[0]
    try:
        mod = __import__(source)
    except ImportError:
        return f"{source} not installed"
    return f"{source} {getattr(mod, '__version__', '?')}"


def make_factory(spec, input_size: int = 32, *, check: bool = False):
    """``factory(in_channels, num_outputs, input_size=input_size)`` building ``spec`` (for
    :func:`nadcore.nets.build_model`, which runs it under a seeded global RNG and checks the
    output itself)."""
    parse_spec(spec)  # fail early on a malformed spec

    def factory(in_channels: int, num_outputs: int, size: int = input_size) -> nn.Module:
        return build_hub_model(spec, in_channels, num_outputs, size, check=check)

    factory.__qualname__ = factory.__name__ = str(spec)
    return factory


def parameter_count(model: nn.Module) -> int:
    """Number of scalar parameters of ``model``."""
    return int(sum(p.numel() for p in model.parameters()))
