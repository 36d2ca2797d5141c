import math
import sys
import textwrap

import pytest
import torch

from nadcore import models
from nadcore.models import ModelSpecError, build_model


@pytest.mark.parametrize("name", ["logreg", "mlp", "lenet", "lenet_nopool", "vgg11", "resnet18",
                                  "resnet18_nopool", "resnet18_narrow", "densenet121"])
@pytest.mark.parametrize("channels,outputs", [(1, 1), (3, 10)])
def test_registry_models_build_and_map_to_outputs(name, channels, outputs):
    m = build_model(name, channels, outputs)  # build_model checks the output shape itself
    with torch.no_grad():
        assert m.eval()(torch.randn(3, channels, 32, 32)).shape == (3, outputs)


def test_reset_parameters_redraws_every_parameter():
    m = build_model("lenet")
    before = [p.detach().clone() for p in m.parameters()]
    torch.manual_seed(1)
    models.reset_parameters(m)
    for a, b in zip(before, m.parameters()):
        assert not torch.equal(a, b)


def test_vgg_reset_keeps_the_authors_conv_initialisation():
    m = build_model("vgg11")
    torch.manual_seed(0)
    m.reset_parameters()
    conv = [mod for mod in m.modules() if isinstance(mod, torch.nn.Conv2d)][-1]
    expected = math.sqrt(2.0 / (9 * conv.out_channels))
    assert conv.weight.std().item() == pytest.approx(expected, rel=0.05)
    assert torch.count_nonzero(conv.bias) == 0


def test_same_seed_same_network_whether_built_or_reset():
    torch.manual_seed(5)
    a = build_model("resnet18_narrow", check=False)
    b = build_model("resnet18_narrow", check=False)
    torch.manual_seed(5)
    b.reset_parameters()
    for p, q in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(p, q)


def test_unknown_name_lists_the_registry():
    with pytest.raises(ModelSpecError, match="unknown model 'lenett'.*lenet"):
        build_model("lenett")


def test_bad_module_and_attribute(tmp_path, monkeypatch):
    with pytest.raises(ModelSpecError, match="cannot import module"):
        build_model("no_such_pkg.nets:Net")
    (tmp_path / "usernets.py").write_text(textwrap.dedent("""
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
    """))
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
