"""Networks: the papers' architectures, their variants, the model registry and seeded
initialisation.

* :mod:`nadcore.nets.architectures`: LogReg, MLP, LeNet, VGG-11, ResNet-18, DenseNet-121;
* :mod:`nadcore.nets.variants`: LeNets that downsample otherwise, residual nets with and without
  skips, the follow-up's CIFAR MLP (``"nadcore.nets.variants:factory"`` specs);
* :mod:`nadcore.nets.registry`: names and specs to seeded models (:func:`build_model`);
* :mod:`nadcore.nets.init`: every parameter from an explicit generator.
"""

from nadcore.nets.architectures import MLP, VGG11, DenseNet121, LeNet, LogReg, ResNet18
from nadcore.nets.init import init_plan, initialise
from nadcore.nets.registry import (
    OPTIONS,
    PUBLISHED_NAMES,
    REGISTRY,
    ModelSpecError,
    build_model,
    check_model_output,
    forward_flops,
    model_names,
    parse_registry_spec,
    registry_spec,
    resolve_factory,
    spec_key,
    spec_name,
    spec_width,
    width_name,
    width_option,
    width_spec,
)

__all__ = [
    "LogReg",
    "MLP",
    "LeNet",
    "VGG11",
    "ResNet18",
    "DenseNet121",
    "init_plan",
    "initialise",
    "REGISTRY",
    "PUBLISHED_NAMES",
    "ModelSpecError",
    "build_model",
    "check_model_output",
    "forward_flops",
    "model_names",
    "resolve_factory",
    "spec_key",
    "spec_name",
    "OPTIONS",
    "parse_registry_spec",
    "registry_spec",
    "spec_width",
    "width_name",
    "width_option",
    "width_spec",
]
