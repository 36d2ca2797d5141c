"""Architectures used in the NAD papers, a registry, and resolution of ``"pkg.mod:factory"`` specs.

The CIFAR-style definitions follow the ones used by the authors' code (3x3 stems, no ImageNet
max-pool, ``F.avg_pool2d(out, 4)`` heads), with any number of input channels and outputs and
PyTorch's default initialisation (the VGG keeps its own normal initialisation of convolutions, as
the original did), drawn from explicit generators by :mod:`nadcore.initialisation`.

A model factory has the signature ``factory(in_channels: int, num_outputs: int) -> nn.Module``.
:func:`build_model` builds any spec from a seed: registry models (and any model class declaring
``default_init = True``) draw their parameters from numpy generators seeded with it; other
factories run under :func:`nadcore.initialisation.seeded_global_rng` (a lock and a seeded,
restored torch RNG), so they keep their own initialisation and stay reproducible under threads.
"""
from __future__ import annotations

import importlib
import math
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "REGISTRY", "build_model", "resolve_factory", "check_model_output", "model_names",
    "spec_key", "spec_name", "ModelSpecError", "PUBLISHED_NAMES",
]


class ModelSpecError(ValueError):
    """A model specification could not be resolved or the model it builds is unusable."""


class _Registered(nn.Module):
    """Registry models declare PyTorch's default initialisation for every parameter, so that
    :mod:`nadcore.initialisation` can draw them from explicit generators, many at once."""

    default_init = True


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------
class LogReg(_Registered):
    """Logistic regression: a single affine map of the flattened input."""

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32):
        super().__init__()
        self.fc = nn.Linear(in_channels * input_size * input_size, num_outputs)

    def forward(self, x):
        return self.fc(x.flatten(1))


class MLP(_Registered):
    """Fully connected ReLU network (hidden sizes 100 and 20 in the underspecification paper)."""

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32,
                 hidden=(100, 20)):
        super().__init__()
        dims = [in_channels * input_size * input_size, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], num_outputs))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x.flatten(1))


class LeNet(_Registered):
    """LeNet-5 as in the original code: conv5-relu-maxpool, conv5-relu-maxpool, 3 FC layers.

    ``pooling=False`` gives the no-pooling variant of the paper's Fig. 3: the two max-pools are
    removed and the first fully connected layer widened to take the 16x24x24 feature map.
    """

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32,
                 pooling: bool = True):
        super().__init__()
        self.pooling = pooling
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        s = input_size - 4
        s = s // 2 if pooling else s
        s = s - 4
        s = s // 2 if pooling else s
        self.fc1 = nn.Linear(16 * s * s, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_outputs)

    def forward(self, x):
        out = F.relu(self.conv1(x))
        if self.pooling:
            out = F.max_pool2d(out, 2)
        out = F.relu(self.conv2(out))
        if self.pooling:
            out = F.max_pool2d(out, 2)
        out = out.flatten(1)
        out = F.relu(self.fc1(out))
        out = F.relu(self.fc2(out))
        return self.fc3(out)


_VGG11_CFG = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]


class VGG11(_Registered):
    """VGG-11 with batch norm (the variant the authors used for NADs), CIFAR head (512-512-out).

    Convolutions get the original code's normal initialisation N(0, 2/(k*k*out_channels)) with
    zero bias; everything else keeps PyTorch's default.
    """

    conv_init = "normal_fan_out"  # the original code's normal initialisation of convolutions

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, batch_norm: bool = True):
        super().__init__()
        layers: list[nn.Module] = []
        c = in_channels
        for v in _VGG11_CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers.append(nn.Conv2d(c, v, 3, padding=1))
                if batch_norm:
                    layers.append(nn.BatchNorm2d(v))
                layers.append(nn.ReLU(inplace=True))
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(512, 512), nn.ReLU(True), nn.Dropout(),
            nn.Linear(512, 512), nn.ReLU(True), nn.Dropout(),
            nn.Linear(512, num_outputs),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class _BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(_Registered):
    """CIFAR ResNet-18 (3x3 stem, no max-pool, global 4x4 average pool before the classifier).

    ``pooling=False`` removes the final average pool (the classifier sees the 512x4x4 map), the
    no-pooling variant for Fig. 3. ``width`` scales every stage (64 is the standard network).
    """

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, pooling: bool = True,
                 width: int = 64):
        super().__init__()
        self.pooling = pooling
        w = width
        self.conv1 = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        planes, layers = w, []
        for mult, stride in [(1, 1), (2, 2), (4, 2), (8, 2)]:
            layers.append(nn.Sequential(_BasicBlock(planes, w * mult, stride),
                                        _BasicBlock(w * mult, w * mult, 1)))
            planes = w * mult
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(planes * (1 if pooling else 16), num_outputs)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        if self.pooling:
            out = F.avg_pool2d(out, 4)
        return self.linear(out.flatten(1))


class _Bottleneck(nn.Module):
    def __init__(self, in_planes, growth_rate):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, 4 * growth_rate, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth_rate)
        self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class _Transition(nn.Module):
    def __init__(self, in_planes, out_planes):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.conv = nn.Conv2d(in_planes, out_planes, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet121(_Registered):
    """CIFAR DenseNet-121 (growth 32, blocks 6-12-24-16, reduction 0.5) as in the original code."""

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, growth_rate: int = 32,
                 nblocks=(6, 12, 24, 16), reduction: float = 0.5):
        super().__init__()
        self.growth_rate = growth_rate
        planes = 2 * growth_rate
        self.conv1 = nn.Conv2d(in_channels, planes, 3, padding=1, bias=False)
        stages = []
        for i, nb in enumerate(nblocks):
            blocks = []
            for _ in range(nb):
                blocks.append(_Bottleneck(planes, growth_rate))
                planes += growth_rate
            stages.append(nn.Sequential(*blocks))
            if i < len(nblocks) - 1:
                out_planes = int(math.floor(planes * reduction))
                stages.append(_Transition(planes, out_planes))
                planes = out_planes
        self.features = nn.Sequential(*stages)
        self.bn = nn.BatchNorm2d(planes)
        self.linear = nn.Linear(planes, num_outputs)

    def forward(self, x):
        out = self.features(self.conv1(x))
        out = F.avg_pool2d(F.relu(self.bn(out)), 4)
        return self.linear(out.flatten(1))


# --------------------------------------------------------------------------------------------
# Registry and resolution
# --------------------------------------------------------------------------------------------
REGISTRY: dict[str, Callable[..., nn.Module]] = {
    "logreg": lambda c, k, s=32: LogReg(c, k, s),
    "mlp": lambda c, k, s=32: MLP(c, k, s),
    "lenet": lambda c, k, s=32: LeNet(c, k, s),
    "lenet_nopool": lambda c, k, s=32: LeNet(c, k, s, pooling=False),
    "vgg11": lambda c, k, s=32: VGG11(c, k),
    "resnet18": lambda c, k, s=32: ResNet18(c, k),
    "resnet18_nopool": lambda c, k, s=32: ResNet18(c, k, pooling=False),
    "resnet18_narrow": lambda c, k, s=32: ResNet18(c, k, width=16),
    "densenet121": lambda c, k, s=32: DenseNet121(c, k),
}

#: Registry names and the file prefix of the authors' published NADs for the same architecture.
PUBLISHED_NAMES = {"logreg": "LogReg", "lenet": "LeNet", "vgg11": "VGG11",
                   "resnet18": "ResNet18", "densenet121": "DenseNet121"}


def model_names() -> list[str]:
    return sorted(REGISTRY)


def resolve_factory(spec) -> Callable[[int, int], nn.Module]:
    """Turn a registry name, a ``"package.module:factory"`` string or a callable into a factory."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(f"model must be a registry name or 'package.module:factory', got {spec!r}")
    spec = spec.strip()
    if spec.lower() in REGISTRY:
        return REGISTRY[spec.lower()]
    if ":" not in spec:
        raise ModelSpecError(
            f"unknown model {spec!r}. Use one of {', '.join(model_names())}, or "
            "'package.module:factory' where factory(in_channels, num_outputs) returns an nn.Module.")
    mod_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(mod_name)
    except Exception as e:  # ImportError and errors raised while importing the user's module
        raise ModelSpecError(
            f"cannot import module {mod_name!r} from model spec {spec!r}: {type(e).__name__}: {e}. "
            "Is the package installed or on PYTHONPATH?") from e
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelSpecError(f"module {mod_name!r} has no attribute {attr!r} (model spec {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ModelSpecError(f"{spec!r} is not callable; expected factory(in_channels, num_outputs)")
    return obj


def _network_seed(seed) -> int:
    from nadcore.utils import derived_seed

    return derived_seed(*seed) if isinstance(seed, (tuple, list)) else int(seed)


def build_model(spec, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, *,
                seed=0, check: bool = True) -> nn.Module:
    """Build a model from ``spec``, initialised from ``seed`` (an int, or a tuple of ints combined
    with :func:`nadcore.utils.derived_seed`), and by default check it maps (B, C, H, W) to
    (B, num_outputs). See the module docstring for how each kind of model is initialised."""
    from nadcore import initialisation as init

    factory = resolve_factory(spec)
    in_registry = isinstance(spec, str) and spec.strip().lower() in REGISTRY
    s = _network_seed(seed)

    def make():
        try:
            return factory(in_channels, num_outputs, input_size) if in_registry else factory(in_channels, num_outputs)
        except Exception as e:
            raise ModelSpecError(
                f"model factory {spec!r} failed when called as factory(in_channels={in_channels}, "
                f"num_outputs={num_outputs}): {type(e).__name__}: {e}") from e

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
        return spec.strip().lower() if spec.strip().lower() in REGISTRY else spec.strip()
    return getattr(spec, "__qualname__", type(spec).__name__)


def spec_key(spec) -> dict:
    """What identifies a model spec in a cache key: its name, and for anything outside the
    registry the digest of the source file of the module that defines the factory (so editing a
    user's model recomputes; registry models are covered by nadcore's own code fingerprint)."""
    import inspect

    from nadcore.cache import source_digest

    name = spec_name(spec)
    if isinstance(spec, str) and name in REGISTRY:
        return {"model": name}
    fn = resolve_factory(spec)
    try:
        path = inspect.getsourcefile(inspect.getmodule(fn) or fn)
    except TypeError:
        path = None
    if not path:
        raise ModelSpecError(f"cannot find the source file of model {name!r}; define the factory in "
                             "a module file so that cached results can track its code")
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
            f"{type(e).__name__}: {e}") from e
    finally:
        model.train(was_training)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_outputs):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ModelSpecError(
            f"model {name!r} returned {shape} for a batch of 2 inputs of shape {tuple(input_shape)}; "
            f"expected (2, {num_outputs}): one value per example"
            + (" (NADs need a scalar output: build the model with num_outputs=1)" if num_outputs == 1 else ""))
