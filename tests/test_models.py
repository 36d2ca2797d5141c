"""nadcore.nets: the registry (nadcore.nets.registry) builds every architecture
(nadcore.nets.architectures) seeded, with PyTorch's default initialisation (nadcore.nets.init),
and explains bad model specs."""

import math
import sys
import textwrap

import pytest
import torch

from nadcore import nets
from nadcore.nets import ModelSpecError, architectures, build_model, init, registry
from nadcore.runtime import derived_seed


@pytest.mark.parametrize(
    "name",
    [
        "logreg",
        "mlp",
        "lenet",
        "lenet_nopool",
        "vgg11",
        "resnet18",
        "resnet18_nopool",
        "resnet18_narrow",
        "densenet121",
    ],
)
@pytest.mark.parametrize("channels,outputs", [(1, 1), (3, 10)])
def test_registry_models_build_and_map_to_outputs(name, channels, outputs):
    m = build_model(name, channels, outputs)  # build_model checks the output shape itself
    with torch.no_grad():
        assert m.eval()(torch.randn(3, channels, 32, 32)).shape == (3, outputs)


def test_seed_decides_every_parameter():
    a, b = build_model("lenet", seed=3), build_model("lenet", seed=3)
    c = build_model("lenet", seed=4)
    for p, q, r in zip(a.parameters(), b.parameters(), c.parameters()):
        assert torch.equal(p, q) and not torch.equal(p, r)
    assert all(
        torch.equal(p, q)
        for p, q in zip(
            build_model("lenet", seed=(3, 1)).parameters(), build_model("lenet", seed=derived_seed(3, 1)).parameters()
        )
    )


def test_nets_reexports_the_registry_architectures_and_initialisation():
    for name in [
        "build_model",
        "ModelSpecError",
        "spec_name",
        "spec_key",
        "REGISTRY",
        "PUBLISHED_NAMES",
        "model_names",
        "resolve_factory",
        "check_model_output",
        "forward_flops",
    ]:
        assert getattr(nets, name) is getattr(registry, name), name
    for name in ["LogReg", "MLP", "LeNet", "VGG11", "ResNet18", "DenseNet121"]:
        assert getattr(nets, name) is getattr(architectures, name), name
    assert nets.init_plan is init.init_plan and nets.initialise is init.initialise
    assert set(nets.model_names()) == set(nets.REGISTRY) >= set(nets.PUBLISHED_NAMES)
    assert isinstance(build_model("lenet"), nets.LeNet) and isinstance(build_model("vgg11"), nets.VGG11)


def test_registry_models_follow_pytorch_default_init_and_the_authors_vgg():
    m = build_model("lenet", seed=1)
    bound = 1 / math.sqrt(6 * 25)
    assert m.conv2.weight.abs().max() <= bound and m.conv2.weight.abs().max() > 0.9 * bound
    v = build_model("vgg11", seed=0)
    conv = [mod for mod in v.modules() if isinstance(mod, torch.nn.Conv2d)][-1]
    assert conv.weight.std().item() == pytest.approx(math.sqrt(2.0 / (9 * conv.out_channels)), rel=0.05)
    assert torch.count_nonzero(conv.bias) == 0
    bn = [mod for mod in v.modules() if isinstance(mod, torch.nn.BatchNorm2d)][0]
    assert torch.all(bn.weight == 1) and torch.all(bn.running_var == 1) and torch.all(bn.running_mean == 0)


def test_building_never_touches_the_global_rng(tmp_path, monkeypatch):
    (tmp_path / "globalnets.py").write_text(
        textwrap.dedent("""
        import torch.nn as nn
        def factory(c, k):
            return nn.Sequential(nn.Flatten(), nn.Linear(c * 32 * 32, k))
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("globalnets", None)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    build_model("resnet18_narrow", seed=1)
    a = build_model("globalnets:factory", seed=2)
    assert torch.equal(torch.get_rng_state(), state)
    b = build_model("globalnets:factory", seed=2)  # a user factory: seeded, reproducible
    assert torch.equal(a[1].weight, b[1].weight)


def test_unknown_name_lists_the_registry():
    with pytest.raises(ModelSpecError, match="unknown model 'lenett'.*lenet"):
        build_model("lenett")


def test_bad_module_and_attribute(tmp_path, monkeypatch):
    with pytest.raises(ModelSpecError, match="cannot import module"):
        build_model("no_such_pkg.nets:Net")
    (tmp_path / "usernets.py").write_text(
        textwrap.dedent("""
        import torch.nn as nn
        class Good(nn.Module):
            def __init__(self, c, k):
                super().__init__(); self.fc = nn.Linear(c * 32 * 32, k)
            def forward(self, x):
                return self.fc(x.flatten(1))
        def ten_outputs(c, k):
            return Good(c, 10)
        def broken(c, k):
            raise RuntimeError("boom")
        def not_a_module(c, k):
            return 3
        CONSTANT = 4
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("usernets", None)
    assert isinstance(build_model("usernets:Good"), torch.nn.Module)
    with pytest.raises(ModelSpecError, match="no attribute"):
        build_model("usernets:Missing")
    with pytest.raises(ModelSpecError, match=r"returned \(2, 10\).*expected \(2, 1\)"):
        build_model("usernets:ten_outputs")
    with pytest.raises(ModelSpecError, match="failed when called.*boom"):
        build_model("usernets:broken")
    with pytest.raises(ModelSpecError, match="not a torch.nn.Module"):
        build_model("usernets:not_a_module")
    with pytest.raises(ModelSpecError, match="not callable"):
        build_model("usernets:CONSTANT")


@pytest.mark.parametrize(
    "spec,name,width,channels",
    [
        ("resnet18?width=16", "resnet18?width=16", 16, 16),
        ("ResNet18?width=64", "resnet18", 64, 64),
        ("vgg11?width=8", "vgg11?width=8", 8, 8),
        ("densenet121?growth_rate=8", "densenet121?growth_rate=8", 8, 16),
        ("resnet18_nopool?width=4", "resnet18_nopool?width=4", 4, 4),
    ],
)
def test_width_specs_build_the_papers_networks_narrower(spec, name, width, channels):
    m = build_model(spec, 1, 2, seed=1)
    first = next(x for x in m.modules() if isinstance(x, torch.nn.Conv2d))
    assert first.out_channels == channels  # the stem: width (DenseNet: 2 x growth rate)
    assert nets.spec_name(spec) == name and nets.spec_key(spec) == {"model": name}
    assert nets.spec_width(spec) == width
    assert nets.width_name(name.split("?")[0]) == ("growth rate" if "dense" in name else "width")
    assert (
        nets.registry_spec(name.split("?")[0], **({"growth_rate": width} if "dense" in name else {"width": width}))
        == name
    )
    assert nets.width_spec(name.split("?")[0], width) == name
    same = build_model(name, 1, 2, seed=1)  # the canonical name is the same network
    assert all(torch.equal(p, q) for p, q in zip(m.parameters(), same.parameters()))


def test_a_network_without_a_width_option_says_which_have_one():
    with pytest.raises(ModelSpecError, match="lenet.*no width option.*resnet18"):
        nets.width_spec("lenet", 8)
    assert nets.width_name("lenet") == "width"


@pytest.mark.parametrize(
    "bad,words",
    [
        ("resnet18?depth=3", "unknown option"),
        ("lenet?width=3", "takes no options"),
        ("resnet18?width=0", "positive integer"),
        ("vgg11?width=1.5", "positive integer"),
        ("resnet18?width=8&width=9", "twice"),
    ],
)
def test_bad_width_specs_say_what_to_write(bad, words):
    with pytest.raises(ModelSpecError, match=words):
        build_model(bad)
