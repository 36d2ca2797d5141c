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
import textwrap
import warnings
from urllib.parse import unquote

import torch
import torch.nn as nn

__all__ = ["ModelSpecError", "ZeroGradientWarning", "DegenerateGradientWarning", "layer_scale_parameters",
           "parse_spec", "build_hub_model", "make_factory", "is_hub_spec", "library_version", "parameter_count",
           "SOURCES", "HUB_OPTIONS"]

SOURCES = ("timm", "torchvision")
HUB_OPTIONS = ("hub_head_std", "hub_layer_scale")
# keys the hub sets itself (per source) or refuses (anything that could load weights)
_OWNED = {"timm": {"in_chans": "in_channels", "num_classes": "num_outputs"},
          "torchvision": {"num_classes": "num_outputs"}}
_FORBIDDEN = {"pretrained", "pretrained_cfg", "pretrained_cfg_overlay", "checkpoint_path", "cache_dir",
              "weights", "weights_backbone", "progress"}


class ModelSpecError(ValueError):
    """A model specification could not be resolved or the model it builds is unusable (also
    raised by :mod:`nadcore.nets.registry` for every kind of spec)."""


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
        raise ModelSpecError(f"model spec must be a non-empty string like 'timm:NAME?k=v' or "
                             f"'torchvision:NAME', got {spec!r}")
    text = spec.strip()
    source, sep, rest = text.partition(":")
    source = source.strip().lower()
    if not sep:
        raise ModelSpecError(f"model spec {spec!r} names no source: write 'timm:{text}' or 'torchvision:{text}'")
    if source not in SOURCES:
        close = difflib.get_close_matches(source, SOURCES, n=1)
        raise ModelSpecError(f"unknown model source {source!r} in {spec!r}; use one of {', '.join(SOURCES)}"
                             + (f" (did you mean {close[0]!r}?)" if close else ""))
    name, _, query = rest.partition("?")
    name = name.strip()
    if not name:
        raise ModelSpecError(f"model spec {spec!r} has no model name after '{source}:'")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        raise ModelSpecError(f"model name {name!r} in {spec!r} is not a plain {source} model name "
                             "(hub paths like 'hf-hub:...' and files are not allowed: nothing is downloaded)")
    kwargs: dict = {}
    for part in query.split("&") if query else []:
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ModelSpecError(f"bad keyword override {part!r} in {spec!r}: write key=value pairs joined by '&', "
                                 "e.g. 'timm:vit_tiny_patch16_224?patch_size=4&depth=4'")
        if key in kwargs:
            raise ModelSpecError(f"keyword {key!r} given twice in {spec!r}")
        if not value.strip():
            raise ModelSpecError(f"keyword {key!r} has an empty value in {spec!r}")
        kwargs[key] = _parse_value(value)
    return source, name, kwargs


# --------------------------------------------------------------------------------------------
# Entrypoints whose fixed keywords the user overrides
# --------------------------------------------------------------------------------------------
_MULTIPLE = re.compile(r"got multiple values for (?:keyword )?argument '(\w+)'")
_UNEXPECTED = re.compile(r"got (?:an )?unexpected keyword argument(?:\(s\): \[)? ?'(\w+)'")


def _without_fixed_keywords(fn, overridden):
    key = (inspect.unwrap(fn), frozenset(overridden))
    if key not in _REWRITTEN:
        _REWRITTEN[key] = _rewrite_without_fixed_keywords(fn, overridden)
    return _REWRITTEN[key]


#: rewritten entrypoints by (entrypoint, overridden keywords): NADs build thousands of networks
_REWRITTEN: dict = {}


def _rewrite_without_fixed_keywords(fn, overridden):
    """A copy of entrypoint ``fn`` (timm ``@register_model`` or torchvision builder) whose calls
    that forward ``**kwargs`` no longer pass the keywords in ``overridden`` themselves, so the
    caller's values win (e.g. ``dict(patch_size=16, num_blocks=8, **kwargs)``)."""
    fn = inspect.unwrap(fn)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ModelSpecError(f"cannot read the source of {fn.__qualname__} to override its fixed keywords: {e}") from e
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise ModelSpecError(f"unexpected source for {fn.__qualname__}")
    fdef.decorator_list = []
    removed = set()

    class Strip(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if any(k.arg is None for k in node.keywords):  # the call forwards **kwargs
                keep = []
                for k in node.keywords:
                    if k.arg is not None and k.arg in overridden:
                        removed.add(k.arg)
                    else:
                        keep.append(k)
                node.keywords = keep
            return node

    tree = ast.fix_missing_locations(Strip().visit(tree))
    namespace = dict(fn.__globals__)  # a copy: the real module is left untouched
    exec(compile(tree, inspect.getsourcefile(fn) or "<entrypoint>", "exec"), namespace)
    return namespace[fdef.name], removed


def _accepted_keywords(cls) -> list[str]:
    try:
        params = inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters
    except (TypeError, ValueError):
        return []
    return [p for p, v in params.items() if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]


def _may_take(cls, key) -> bool:
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return True
    return key in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def _returned_class(fn):
    ann = inspect.signature(inspect.unwrap(fn)).return_annotation
    if isinstance(ann, str):  # postponed annotations
        ann = inspect.unwrap(fn).__globals__.get(ann)
    return ann if inspect.isclass(ann) else None


def _call_with_overrides(label, fn, cls, kwargs, user_keys, spec, retry_without=(), entry=None, fixed=None):
    """Call ``fn(**kwargs)``; translate TypeErrors about keywords into ModelSpecError, dropping
    keywords in ``retry_without`` (set by the hub, not the user) when the model rejects them.
    If ``entry`` (the entrypoint/builder ``fn`` calls) fixes a keyword given in ``kwargs``, call a
    copy of ``entry`` without its fixed values instead, as ``entry(**fixed, **kwargs)``."""
    kwargs = dict(kwargs)
    current, extra = fn, {}
    for _ in range(8):
        try:
            return current(**extra, **kwargs)
        except TypeError as e:
            msg = str(e)
            m = _UNEXPECTED.search(msg)
            if m and m.group(1) in retry_without and m.group(1) not in user_keys:
                kwargs.pop(m.group(1))
                continue
            if m:
                ok = _accepted_keywords(cls) if cls is not None else []
                close = difflib.get_close_matches(m.group(1), ok, n=3)
                raise ModelSpecError(
                    f"{label} does not accept the keyword {m.group(1)!r} (from {spec!r}): {type(e).__name__}: {msg}. "
                    + (f"Did you mean {', '.join(close)}? " if close else "")
                    + (f"{cls.__name__} accepts: {', '.join(ok)}." if ok else "Remove it from the spec.")) from e
            m = _MULTIPLE.search(msg)
            if m and current is fn and entry is not None:
                current, removed = _without_fixed_keywords(entry, set(kwargs))
                extra = dict(fixed or {})
                if removed:
                    continue
            raise ModelSpecError(f"building {label} from {spec!r} failed: {type(e).__name__}: {msg}. "
                                 + _hint(msg)) from e
        except ModelSpecError:
            raise
        except Exception as e:  # assertions and ValueErrors raised by constructors
            raise ModelSpecError(f"building {label} from {spec!r} failed: {type(e).__name__}: {e}. "
                                 + _hint(str(e))) from e
    raise ModelSpecError(f"building {label} from {spec!r} failed repeatedly on its keywords")


def _hint(msg: str) -> str:
    low = msg.lower()
    if "object is not callable" in low:
        return ("Hint: a keyword expects a class or function (e.g. act_layer, norm_layer), but spec values are "
                "literals or strings; leave that keyword at its default.")
    if "exceptions must derive from baseexception" in low:
        return ("Hint: the model rejected a keyword value with a malformed raise (a timm bug), e.g. XCiT's "
                "convolutional patch embedding only takes patch_size=8 or 16.")
    if "patch" in low or "divisible" in low or "indivisible" in low:
        return ("Hint: the patch size must divide the image size (override patch_size=4 or 8 for 32x32), and "
                "window sizes must divide the token grid (override window_size).")
    if "img_size" in low or "image size" in low or "doesn't match model" in low or "wrong image" in low \
            or "input image" in low or "position" in low:
        return "Hint: set img_size (timm) / image_size (torchvision) to the input size, e.g. img_size=32."
    if "output size is too small" in low or "kernel size can't be greater" in low or "non-positive" in low \
            or "larger than" in low:
        return ("Hint: the network downsamples a 32x32 input to nothing; use fewer stages/strides or a smaller "
                "patch size (e.g. depths=(...) with fewer entries, patch_size=2).")
    if "expected more than 1 value per channel" in low:
        return "Hint: a BatchNorm saw one value per channel in train mode; use eval() or a larger batch."
    if "size mismatch" in low or "shape" in low or "must match" in low:
        return ("Hint: the model's sizes are inconsistent with a 32x32 input; override img_size/patch_size/"
                "window_size or widths (embed_dim, dims) so they agree.")
    return "Hint: check the keyword overrides against the model's constructor, and that the model suits 32x32 inputs."


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
        if "img_size" not in kwargs and (cls is None or _may_take(cls, "img_size")):
            args["img_size"] = input_size
            retry = ("img_size",)

    if timm.is_model(name):
        entry = timm.models.model_entrypoint(name)
        cls = _returned_class(entry)
        offer_img_size(cls)

        def fn(**kw):  # pretrained=False: no weights, no download
            return timm.create_model(name, pretrained=False, **kw)

        return _call_with_overrides(f"timm model {name!r}", fn, cls, args, set(kwargs), spec, retry,
                                    entry=entry, fixed={"pretrained": False})
    cls = getattr(timm.models, name, None)
    if inspect.isclass(cls) and issubclass(cls, nn.Module):
        offer_img_size(cls)
        return _call_with_overrides(f"timm class {name!r}", cls, cls, args, set(kwargs), spec, retry)
    known = timm.list_models()
    classes = [n for n in dir(timm.models) if n[:1].isupper() and inspect.isclass(getattr(timm.models, n))
               and issubclass(getattr(timm.models, n), nn.Module)]
    close = [n for n in known if n.startswith(name)][:4]
    close += [n for n in difflib.get_close_matches(name, known + classes, n=6, cutoff=0.5) if n not in close][:6 - len(close)]
    raise ModelSpecError(f"unknown timm model {name!r} (timm {timm.__version__})."
                         + (f" Close names: {', '.join(close)}." if close else "")
                         + " List them with timm.list_models('*pattern*').")


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
        close += [n for n in difflib.get_close_matches(name.lower(), known, n=6, cutoff=0.5) if n not in close][:6 - len(close)]
        extra = (f" ({name!r} is a torchvision detection/segmentation/video model; only image classifiers "
                 "are supported.)" if name in others else "")
        raise ModelSpecError(f"unknown torchvision classification model {name!r}." + extra
                             + (f" Close names: {', '.join(close)}." if close else "")
                             + " List them with torchvision.models.list_models(module=torchvision.models).")
    builder = tvm.get_model_builder(name)
    cls = _returned_class(builder)
    args = dict(kwargs, num_classes=num_outputs)
    if "image_size" not in kwargs and cls is not None and "image_size" in _accepted_keywords(cls):
        args["image_size"] = input_size

    def fn(**kw):
        return builder(weights=None, **kw)

    model = _call_with_overrides(f"torchvision model {name!r}", fn, cls, args, set(kwargs), spec,
                                 entry=builder, fixed={"weights": None})
    if in_channels != 3:
        _replace_stem(model, in_channels, spec)
    return model


def _replace_stem(model: nn.Module, in_channels: int, spec) -> None:
    for mname, mod in model.named_modules():
        if isinstance(mod, nn.Conv2d) and mod.in_channels == 3 and mod.groups == 1:
            new = nn.Conv2d(in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride, padding=mod.padding,
                            dilation=mod.dilation, groups=1, bias=mod.bias is not None,
                            padding_mode=mod.padding_mode, device=mod.weight.device, dtype=mod.weight.dtype)
            with torch.no_grad():
                w = mod.weight
                if in_channels <= 3:
                    new.weight.copy_(w[:, :in_channels])
                else:  # extra channels: random permutations of the drawn weights (same distribution)
                    reps = [w] + [w.flatten()[torch.randperm(w.numel())].view_as(w)
                                  for _ in range((in_channels - 1) // 3)]
                    new.weight.copy_(torch.cat(reps, 1)[:, :in_channels])
                if mod.bias is not None:
                    new.bias.copy_(mod.bias)
            parent = model.get_submodule(mname.rpartition(".")[0]) if "." in mname else model
            setattr(parent, mname.rpartition(".")[2], new)
            return
    raise ModelSpecError(f"{spec!r}: found no 3-channel nn.Conv2d stem to adapt to {in_channels} input channel(s)")


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------
def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _divisors(n):
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def _precheck(kwargs, input_size, spec):
    if "patch_size" in kwargs:
        try:
            ps = [int(p) for p in _pair(kwargs["patch_size"])]
        except (TypeError, ValueError):
            raise ModelSpecError(f"patch_size={kwargs['patch_size']!r} in {spec!r} is not an int") from None
        if any(p < 1 or input_size % p for p in ps):
            raise ModelSpecError(
                f"patch_size={kwargs['patch_size']!r} does not divide the image size {input_size} ({spec!r}): "
                f"the patch embedding would drop border pixels. Override patch_size with one of: {_divisors(input_size)}.")


def _check_geometry(model, input_size, kwargs, spec):
    """Patchify stem that drops pixels; Swin windows that do not tile the token grid."""
    stem = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
    if stem is not None:
        k, s, p = stem.kernel_size, stem.stride, stem.padding
        if p == (0, 0) and s[0] > 1 and k == s and input_size % s[0]:
            raise ModelSpecError(
                f"the patch embedding of {spec!r} ({k[0]}x{k[0]} stride {s[0]}) does not divide the image size "
                f"{input_size}: the last {input_size % s[0]} rows and columns would never be seen (zero gradient). "
                f"Override patch_size with one of: {_divisors(input_size)}.")
    first = True
    for mname, m in model.named_modules():  # timm Swin blocks (window clamped to the grid by timm)
        if hasattr(m, "window_size") and hasattr(m, "input_resolution") and isinstance(m.input_resolution, tuple):
            res, win = _pair(m.input_resolution), _pair(m.window_size)
            if first and "window_size" in kwargs and any(w > r for w, r in zip(_pair(kwargs["window_size"]), res)):
                raise ModelSpecError(
                    f"window_size={kwargs['window_size']!r} is larger than the {res[0]}x{res[1]} token grid of the "
                    f"first stage of {spec!r} (timm would clamp it: global attention, no shifted windows). "
                    f"Override window_size with a divisor of {res[0]}, e.g. window_size={max(1, res[0] // 2)}.")
            first = False
            if any(r % w for r, w in zip(res, win)):
                raise ModelSpecError(
                    f"window_size {win[0]} does not tile the {res[0]}x{res[1]} token grid at {mname} of {spec!r} "
                    f"(windows would be padded). Override window_size with a divisor of {res[0]}: {_divisors(res[0])}.")


def _torchvision_swin_grid(model, in_shape, spec):
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


_LAYER_SCALE = re.compile(r"(^|\.)(gamma_?\d?|ls_?\d?|layer_scale_?\d?)(\.(gamma|scale))?$")


def layer_scale_parameters(model):
    """``[(name, parameter), ...]`` of the layer-scale gains of ``model`` (not norm parameters)."""
    found = []
    for mname, mod in model.named_modules():
        if "norm" in type(mod).__name__.lower() or "grn" in type(mod).__name__.lower():
            continue
        for pname, p in mod.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            if _LAYER_SCALE.search(full):
                found.append((full, p))
    return found


def _classifier(model):
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


def _check_output(model, in_channels, num_outputs, input_size, spec):
    was_training = model.training
    model.eval()
    swin = _torchvision_swin_grid(model, (in_channels, input_size, input_size), spec)
    try:
        p = next(model.parameters(), None)
        x = torch.zeros((2, in_channels, input_size, input_size), device=p.device if p is not None else "cpu")
        with torch.no_grad():
            out = model(x)
    except Exception as e:
        raise ModelSpecError(f"model {spec!r} failed on an input of shape (2, {in_channels}, {input_size}, "
                             f"{input_size}): {type(e).__name__}: {e}. {_hint(str(e))}") from e
    finally:
        model.train(was_training)
        if swin:
            swin[0].remove()
    if swin and swin[2]:
        grid, win = swin[2][0], _pair(swin[1].window_size)
        if any(w > g or g % w for w, g in zip(win, grid)):
            raise ModelSpecError(
                f"window_size {list(win)} of {spec!r} does not tile the {grid[0]}x{grid[1]} token grid of the first "
                f"stage (torchvision would pad it). Override window_size=[w,w] with w one of: {_divisors(grid[0])}.")
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_outputs):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ModelSpecError(f"model {spec!r} returned {shape} for a batch of 2 inputs of shape "
                             f"({in_channels}, {input_size}, {input_size}); expected (2, {num_outputs}). "
                             "Hint: the model must end in a classifier with num_classes outputs and global pooling "
                             "(check global_pool / features_only overrides).")


# --------------------------------------------------------------------------------------------
# Public
# --------------------------------------------------------------------------------------------
def build_hub_model(spec, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, *,
                    check: bool = True) -> nn.Module:
    """Build ``spec`` (``timm:NAME?k=v`` or ``torchvision:NAME?k=v``) from scratch for
    (in_channels, input_size, input_size) inputs and ``num_outputs`` outputs. Parameters are
    drawn from torch's global CPU RNG (seed it, e.g. under ``torch.random.fork_rng``)."""
    source, name, kwargs = parse_spec(spec)
    hub = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("hub_")}
    for k in hub:
        if k not in HUB_OPTIONS:
            close = difflib.get_close_matches(k, HUB_OPTIONS, n=1)
            raise ModelSpecError(f"unknown hub option {k!r} in {spec!r}; hub options: {', '.join(HUB_OPTIONS)}"
                                 + (f" (did you mean {close[0]!r}?)" if close else ""))
    for k, v in kwargs.items():
        if k in _FORBIDDEN:
            raise ModelSpecError(f"{k}={v!r} in {spec!r}: models are always built from scratch "
                                 "(pretrained=False / weights=None, nothing is downloaded); remove it.")
        if k in _OWNED[source]:
            raise ModelSpecError(f"{k} in {spec!r} is set by the hub from {_OWNED[source][k]}; remove it from the spec.")
    _precheck(kwargs, input_size, spec)
    build = _build_timm if source == "timm" else _build_torchvision
    model = build(name, kwargs, in_channels, num_outputs, input_size, spec)
    if not isinstance(model, nn.Module):
        raise ModelSpecError(f"{spec!r} built a {type(model).__name__}, not a torch.nn.Module")
    _check_geometry(model, input_size, kwargs, spec)
    head = _classifier(model)
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
        warnings.warn(f"{spec!r}: the classifier head is initialised to zero, so the output is constant and the "
                      "input gradient is identically zero at initialisation (no NADs). Add hub_head_std=0.02 to the "
                      "spec to draw the head from a truncated normal.", ZeroGradientWarning, stacklevel=2)
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
        _check_output(model, in_channels, num_outputs, input_size, spec)
    return model


_LS_KEYWORDS = ("ls_init_value", "layer_scale_init_values", "layer_scale_init_value", "init_values", "layer_scale")


def _warn_degenerate(model, spec):
    small = [n for n, p in layer_scale_parameters(model) if float(p.detach().abs().max()) <= 1e-3]
    if small:
        ok = [k for k in _LS_KEYWORDS if k in _accepted_keywords(type(model))]
        fix = f"{ok[0]}=1.0" if ok else "hub_layer_scale=1.0"
        warnings.warn(f"{spec!r}: {len(small)} layer-scale gains (e.g. {small[0]}) are initialised at <= 1e-3, so the "
                      "residual blocks are nearly invisible to the input gradient at initialisation (it is that of "
                      f"the stem/downsampling path). Add {fix} to the spec to give the blocks their weight.",
                      DegenerateGradientWarning, stacklevel=3)
    zero_bn = [n for n, m in model.named_modules()
               if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.weight is not None and not torch.any(m.weight != 0)]
    if zero_bn:
        ok = [k for k in ("zero_init_last", "zero_init_residual") if k in _accepted_keywords(type(model))]
        fix = (f"Add {ok[0]}=False to the spec." if ok else
               f"{type(model).__name__} has no keyword to turn this off (e.g. timm LeViT zero-initialises its residual "
               "BatchNorms); prefer another model for NADs at initialisation.")
        warnings.warn(f"{spec!r}: {len(zero_bn)} BatchNorm gains (e.g. {zero_bn[0]}) are initialised to zero, so those "
                      "residual branches output zero and the input gradient flows only through the shortcuts (with "
                      f"strided 1x1 shortcuts most input pixels get exactly zero gradient). {fix}",
                      DegenerateGradientWarning, stacklevel=3)


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
