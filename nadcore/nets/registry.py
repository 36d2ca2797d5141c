"""The model registry: names, ``"package.module:factory"``, ``"timm:NAME?k=v"`` and
``"torchvision:NAME?k=v"`` specs to seeded networks.

A registry name may carry the options its architecture declares in :data:`OPTIONS`, as
``"resnet18?width=16"``, ``"vgg11?width=16"`` or ``"densenet121?growth_rate=8"``: the paper's
networks at a reduced width (every layer's channels scaled by ``width / 64``; DenseNet-121's
growth rate instead of 32). :func:`spec_name` writes such a spec canonically (options sorted,
those equal to the default dropped), so ``"resnet18?width=64"`` is ``"resnet18"``: the name,
and with it the cache keys, bundle rows and panel titles, always say the width.

A model factory has the signature ``factory(in_channels: int, num_outputs: int) -> nn.Module``.
:func:`build_model` builds any spec from a seed: registry models (and any model class declaring
``default_init = True``) draw their parameters from numpy generators seeded with it
(:mod:`nadcore.nets.init`); other factories run under :func:`nadcore.nets.init.seeded_global_rng`
(a lock and a seeded, restored torch RNG), so they keep their own initialisation and stay
reproducible under threads. timm and torchvision specs (:mod:`nadcore.nets.hub`) are built from
scratch for the book's inputs (channels, outputs, image size), never with pretrained weights.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Callable

import torch
import torch.nn as nn

from nadcore.nets import hub, init
from nadcore.nets.architectures import MLP, VGG11, DenseNet121, LeNet, LogReg, ResNet18
from nadcore.runtime import derived_seed, source_digest

__all__ = [
    "REGISTRY",
    "build_model",
    "resolve_factory",
    "check_model_output",
    "model_names",
    "spec_key",
    "spec_name",
    "ModelSpecError",
    "PUBLISHED_NAMES",
    "forward_flops",
    "OPTIONS",
    "parse_registry_spec",
    "registry_spec",
    "spec_width",
]


ModelSpecError = hub.ModelSpecError


# --------------------------------------------------------------------------------------------
# Registry and resolution
# --------------------------------------------------------------------------------------------
REGISTRY: dict[str, Callable[..., nn.Module]] = {
    "logreg": lambda c, k, s=32: LogReg(c, k, s),
    "mlp": lambda c, k, s=32: MLP(c, k, s),
    "lenet": lambda c, k, s=32: LeNet(c, k, s),
    "lenet_nopool": lambda c, k, s=32: LeNet(c, k, s, pooling=False),
    "vgg11": lambda c, k, s=32, **o: VGG11(c, k, **o),
    "resnet18": lambda c, k, s=32, **o: ResNet18(c, k, **o),
    "resnet18_nopool": lambda c, k, s=32, **o: ResNet18(c, k, pooling=False, **o),
    "resnet18_narrow": lambda c, k, s=32: ResNet18(c, k, width=16),
    "densenet121": lambda c, k, s=32, **o: DenseNet121(c, k, **o),
}

#: the options a registry name takes after ``?`` (``"resnet18?width=16"``), with their defaults
OPTIONS: dict[str, dict[str, int]] = {
    "vgg11": {"width": 64},
    "resnet18": {"width": 64},
    "resnet18_nopool": {"width": 64},
    "densenet121": {"growth_rate": 32},
}


def parse_registry_spec(spec: str) -> tuple[str, dict] | None:
    """``"resnet18?width=16"`` -> ``("resnet18", {"width": 16})``; a plain registry name gives
    ``(name, {})``; anything that is not a registry name (with or without options) gives None.
    Options must be those of :data:`OPTIONS` for that name, as positive integers."""
    if not isinstance(spec, str):
        return None
    base, q, query = spec.strip().partition("?")
    base = base.strip().lower()
    if base not in REGISTRY:
        return None
    if not q:
        return base, {}
    allowed = OPTIONS.get(base, {})
    if not allowed:
        raise ModelSpecError(
            f"model {base!r} takes no options (got {spec!r}); the registry models with "
            f"options are {', '.join(f'{n}?{next(iter(o))}=N' for n, o in OPTIONS.items())}"
        )
    opts = {}
    for part in (p for p in query.split("&") if p.strip()):
        key, eq, value = (x.strip() for x in part.partition("="))
        if key not in allowed or not eq:
            raise ModelSpecError(
                f"unknown option {part!r} for model {base!r} in {spec!r}; it takes "
                f"{', '.join(f'{k}=N (default {v})' for k, v in allowed.items())}"
            )
        if key in opts:
            raise ModelSpecError(f"option {key!r} given twice in {spec!r}")
        try:
            opts[key] = int(value)
        except ValueError:
            opts[key] = 0
        if opts[key] < 1 or str(opts[key]) != value.lstrip("+"):
            raise ModelSpecError(f"option {key}={value!r} of {spec!r} must be a positive integer")
    return base, opts


def registry_spec(name: str, **options) -> str:
    """The canonical spec of registry model ``name`` with ``options`` (sorted; defaults dropped):
    ``registry_spec("resnet18", width=16) == "resnet18?width=16"``,
    ``registry_spec("resnet18", width=64) == "resnet18"``."""
    parsed = parse_registry_spec(name)
    if parsed is None:
        raise ModelSpecError(f"{name!r} is not a registry model")
    base, opts = parsed
    opts = {**opts, **options}
    if opts:  # validate through the parser
        parse_registry_spec(f"{base}?" + "&".join(f"{k}={v}" for k, v in opts.items()))
    keep = {k: int(v) for k, v in sorted(opts.items()) if int(v) != OPTIONS[base][k]}
    return base + ("?" + "&".join(f"{k}={v}" for k, v in keep.items()) if keep else "")


def width_option(arch: str) -> str:
    """The name of registry network ``arch``'s width option: ``"width"``, or ``"growth_rate"``
    for DenseNet-121."""
    if arch not in OPTIONS:
        raise ModelSpecError(f"{arch!r} has no width option (those with one: {', '.join(OPTIONS)})")
    return next(iter(OPTIONS[arch]))


def width_spec(arch: str, width) -> str:
    """The canonical spec of registry network ``arch`` at ``width``:
    ``width_spec("densenet121", 8) == "densenet121?growth_rate=8"``."""
    return registry_spec(arch, **{width_option(arch): int(width)})


def spec_width(spec) -> int | None:
    """The width of a registry spec with a width option (``width`` or DenseNet-121's
    ``growth_rate``), its default where not given; None for other models."""
    parsed = parse_registry_spec(spec) if isinstance(spec, str) else None
    if parsed is None or parsed[0] not in OPTIONS:
        return None
    base, opts = parsed
    key = width_option(base)
    return int(opts.get(key, OPTIONS[base][key]))


def width_name(arch: str) -> str:
    """What the width option of registry network ``arch`` is called in prose: ``"width"``, or
    ``"growth rate"`` for DenseNet-121."""
    return width_option(arch).replace("_", " ") if arch in OPTIONS else "width"


#: Registry names and the file prefix of the authors' published NADs for the same architecture.
PUBLISHED_NAMES = {
    "logreg": "LogReg",
    "lenet": "LeNet",
    "vgg11": "VGG11",
    "resnet18": "ResNet18",
    "densenet121": "DenseNet121",
}


def model_names() -> list[str]:
    return sorted(REGISTRY)


def resolve_factory(spec) -> Callable[[int, int], nn.Module]:
    """Turn a registry name, a ``"package.module:factory"`` string, a ``"timm:NAME?k=v"`` /
    ``"torchvision:NAME?k=v"`` spec or a callable into a factory."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(
            f"model must be a registry name, 'package.module:factory', 'timm:NAME' or 'torchvision:NAME', got {spec!r}"
        )
    spec = spec.strip()
    if spec.lower() in REGISTRY:
        return REGISTRY[spec.lower()]
    parsed = parse_registry_spec(spec)
    if parsed is not None:
        base, opts = parsed
        return lambda c, k, s=32: REGISTRY[base](c, k, s, **opts)
    if hub.is_hub_spec(spec):  # before the generic rule, which would read "timm" as a module
        return hub.make_factory(spec)
    if ":" not in spec:
        raise ModelSpecError(
            f"unknown model {spec!r}. Use one of {', '.join(model_names())}, "
            "'package.module:factory' where factory(in_channels, num_outputs) returns an nn.Module, "
            "'timm:NAME?k=v' (e.g. 'timm:vit_tiny_patch16_224?patch_size=4') or 'torchvision:NAME'."
        )
    mod_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(mod_name)
    except Exception as e:  # ImportError and errors raised while importing the user's module
        raise ModelSpecError(
            f"cannot import module {mod_name!r} from model spec {spec!r}: {type(e).__name__}: {e}. "
            "Is the package installed or on PYTHONPATH?"
        ) from e
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelSpecError(f"module {mod_name!r} has no attribute {attr!r} (model spec {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ModelSpecError(f"{spec!r} is not callable; expected factory(in_channels, num_outputs)")
    return obj


def _network_seed(seed) -> int:
    return derived_seed(*seed) if isinstance(seed, (tuple, list)) else int(seed)


def build_model(
    spec, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, *, seed=0, check: bool = True
) -> nn.Module:
    """Build a model from ``spec``, initialised from ``seed`` (an int, or a tuple of ints combined
    with :func:`nadcore.runtime.derived_seed`), and by default check it maps (B, C, H, W) to
    (B, num_outputs). See the module docstring for how each kind of model is initialised."""
    factory = resolve_factory(spec)
    in_registry = parse_registry_spec(spec) is not None
    sized = in_registry or (isinstance(spec, str) and hub.is_hub_spec(spec))
    s = _network_seed(seed)

    def make():
        try:
            return factory(in_channels, num_outputs, input_size) if sized else factory(in_channels, num_outputs)
        except ModelSpecError:
            raise
        except Exception as e:
            raise ModelSpecError(
                f"model factory {spec!r} failed when called as factory(in_channels={in_channels}, "
                f"num_outputs={num_outputs}): {type(e).__name__}: {e}"
            ) from e

    if in_registry:
        with torch.device("meta"):  # no throw-away initialisation, no global RNG
            model = make()
        # to_empty(device="cpu") without empty_like on meta tensors, whose first call imports
        # torch's Python decompositions (half a second per process)
        model = model._apply(lambda t: torch.empty(t.shape, dtype=t.dtype))
        init.initialise(model, s)
    else:
        with init.seeded_global_rng(s):
            model = make()
        if not isinstance(model, nn.Module):
            raise ModelSpecError(f"model factory {spec!r} returned {type(model).__name__}, not a torch.nn.Module")
        plan = init.init_plan(model)
        if plan is not None:  # the class declares default_init: draw it like a registry model
            init.initialise(model, s, plan)
    if check:
        check_model_output(model, (in_channels, input_size, input_size), num_outputs, spec)
    return model


def spec_name(spec) -> str:
    """The name a model spec goes by in tables and cache keys (registry names in lower case)."""
    if isinstance(spec, str):
        return registry_spec(spec) if parse_registry_spec(spec) is not None else spec.strip()
    return getattr(spec, "__qualname__", type(spec).__name__)


def spec_key(spec) -> dict:
    """What identifies a model spec in a cache key: its name, and for anything outside the
    registry the digest of the source file of the module that defines the factory (so editing a
    user's model recomputes; registry models are covered by nadcore's own code fingerprint)."""
    name = spec_name(spec)
    if parse_registry_spec(spec) is not None:
        return {"model": name}
    if isinstance(spec, str) and hub.is_hub_spec(spec):  # the library's version decides the model
        return {"model": name, "library": hub.library_version(spec)}
    fn = resolve_factory(spec)
    try:
        path = inspect.getsourcefile(inspect.getmodule(fn) or fn)
    except TypeError:
        path = None
    if not path:
        raise ModelSpecError(
            f"cannot find the source file of model {name!r}; define the factory in "
            "a module file so that cached results can track its code"
        )
    return {"model": name, "source": source_digest([path])}


def check_model_output(model: nn.Module, input_shape, num_outputs: int = 1, spec=None) -> None:
    """Raise ModelSpecError unless ``model`` maps a (2, *input_shape) batch to shape (2, num_outputs)."""
    name = spec if spec is not None else type(model).__name__
    was_training = model.training
    model.eval()
    try:
        p = next(model.parameters(), None)
        dev = p.device if p is not None else torch.device("cpu")
        with torch.no_grad():
            out = model(torch.zeros((2, *input_shape), device=dev))
    except Exception as e:
        raise ModelSpecError(
            f"model {name!r} failed on an input of shape (2, {', '.join(map(str, input_shape))}): "
            f"{type(e).__name__}: {e}"
        ) from e
    finally:
        model.train(was_training)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_outputs):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ModelSpecError(
            f"model {name!r} returned {shape} for a batch of 2 inputs of shape {tuple(input_shape)}; "
            f"expected (2, {num_outputs}): one value per example"
            + (" (NADs need a scalar output: build the model with num_outputs=1)" if num_outputs == 1 else "")
        )


def forward_flops(model: torch.nn.Module, input_shape) -> float:
    """Multiply-add FLOPs (x2) of one forward pass of one input, from Conv/Linear layers."""
    total = [0.0]

    def hook(mod, inp, out):
        total[0] += 2.0 * out.numel() * mod.weight[0].numel()

    hs = [
        m.register_forward_hook(hook)
        for m in model.modules()
        if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear))
    ]
    try:
        with torch.no_grad():
            p = next(model.parameters(), None)
            model.eval()(torch.zeros((1, *input_shape), device=p.device if p is not None else "cpu"))
    finally:
        for h in hs:
            h.remove()
    return total[0]
