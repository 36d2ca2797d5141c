"""nadcore.train.side_by_side: R runs of one architecture trained side by side (vmap over
functional_call with stacked parameters and buffers) equal each run trained alone, BatchNorm
running statistics included. In float64, so that rounding differences (vmap's grouped
convolutions sum in another order) stay far below the tolerance over the steps (in float32 a
ReLU or BatchNorm step can amplify a last-bit difference to 1e-3 within a few SGD steps of a
tiny ResNet)."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from nadcore.data import directional_train_test, fourier_basis_vector
from nadcore.nets import build_model
from nadcore.nets.architectures import ResNet18
from nadcore.train import train_classifier, train_side_by_side

KW = dict(epochs=2, batch_size=24, max_lr=0.1, momentum=0.9, weight_decay=1e-4)


def _datasets(R, n=60, n_test=40):
    xs, ys, xts, yts = [], [], [], []
    for r in range(R):
        x, y, xt, yt = directional_train_test(
            fourier_basis_vector(2 * r, 4), n, n_test, 3.0, 1.0, generator=torch.Generator().manual_seed(10 + r)
        )
        xs.append(x), ys.append((y < 0).long()), xts.append(xt), yts.append((yt < 0).long())
    return xs, ys, xts, yts


def _tiny_resnet(seed):
    torch.manual_seed(seed)  # a test network: torch's own initialisation is fine here
    return ResNet18(1, 2, width=4).double()


class _TinyDropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 5, stride=4)
        self.bn = nn.BatchNorm2d(3)
        self.fc1 = nn.Linear(3 * 7 * 7, 16)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.fc2(self.drop(torch.relu(self.fc1(h))))


def _compare(make, R=3, **extra):
    """Side by side vs a loop of train_classifier, in float64."""
    xs, ys, xts, yts = _datasets(R)
    models = [make(i) for i in range(R)]
    alone = [copy.deepcopy(m) for m in models]
    res = train_side_by_side(
        models,
        xs,
        ys,
        generators=[torch.Generator().manual_seed(100 + i) for i in range(R)],
        device="cpu",
        xs_test=xts,
        ys_test=yts,
        **KW,
        **extra,
    )
    ref = [
        train_classifier(
            alone[i],
            xs[i],
            ys[i],
            generator=torch.Generator().manual_seed(100 + i),
            device="cpu",
            x_test=xts[i],
            y_test=yts[i],
            **KW,
        )
        for i in range(R)
    ]
    for i in range(R):
        np.testing.assert_allclose(res[i].iter_loss, ref[i].iter_loss, rtol=1e-6, atol=1e-7)
        assert res[i].train_acc == ref[i].train_acc and res[i].test_acc == ref[i].test_acc
        np.testing.assert_allclose(res[i].test_loss, ref[i].test_loss, rtol=1e-9)
        for (n1, a), (n2, b) in zip(models[i].state_dict().items(), alone[i].state_dict().items()):
            assert n1 == n2
            if a.dtype.is_floating_point:
                torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"run {i}: {n1}")
            else:  # num_batches_tracked
                assert torch.equal(a, b), (i, n1)
    return models, res


def test_side_by_side_equals_each_run_alone_batchnorm_resnet():
    models, res = _compare(_tiny_resnet)
    # the running statistics moved, and differ from run to run
    rm = [m.bn1.running_mean.clone() for m in models]
    assert not torch.equal(rm[0], torch.zeros_like(rm[0])) and not torch.equal(rm[0], rm[1])
    assert int(models[0].bn1.num_batches_tracked) == 2 * 3  # 2 epochs x ceil(60 / 24) batches
    assert res[0].config["side_by_side"] == 3 and res[0].config["autocast"] is None


def test_side_by_side_equals_each_run_alone_without_batchnorm():
    _compare(lambda i: build_model("lenet", 1, 2, seed=i).double())


def test_channels_last_layout_gives_the_same_training():
    xs, ys, _, _ = _datasets(2)
    out = []
    for cl in (False, True):
        models = [_tiny_resnet(i) for i in range(2)]
        res = train_side_by_side(
            models,
            xs,
            ys,
            generators=[torch.Generator().manual_seed(i) for i in range(2)],
            device="cpu",
            channels_last=cl,
            **KW,
        )
        out.append((np.stack([r.iter_loss for r in res]), models[1].layer2[0].bn1.running_var.clone()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(out[0][1], out[1][1], rtol=1e-9, atol=1e-11)


def test_dropout_masks_come_from_per_run_generators():
    """With dropout, R runs side by side == each run alone (R = 1) given the same batch-order and
    dropout generators; another dropout generator gives another run."""
    R = 3
    xs, ys, xts, yts = _datasets(R)

    def go(idx, dseed=0):
        torch.manual_seed(0)
        nets = [_TinyDropoutNet() for _ in range(R)]
        nets = [nets[i] for i in idx]
        res = train_side_by_side(
            nets,
            [xs[i] for i in idx],
            [ys[i] for i in idx],
            generators=[torch.Generator().manual_seed(i) for i in idx],
            dropout_generators=[torch.Generator().manual_seed(50 + i + dseed) for i in idx],
            device="cpu",
            xs_test=[xts[i] for i in idx],
            ys_test=[yts[i] for i in idx],
            **KW,
        )
        return res, nets

    together, nets = go(range(R))
    for i in range(R):
        (alone,), (net,) = go([i])
        np.testing.assert_allclose(together[i].iter_loss, alone.iter_loss, rtol=1e-5, atol=1e-6)
        assert together[i].test_acc == alone.test_acc
        torch.testing.assert_close(nets[i].bn.running_mean, net.bn.running_mean)
    other, _ = go([0], dseed=7)
    assert not np.allclose(other[0].iter_loss, together[0].iter_loss)
    with pytest.raises(ValueError, match="dropout generator"):
        train_side_by_side([_TinyDropoutNet()], xs[:1], ys[:1], generators=[torch.Generator()], device="cpu", **KW)


def test_bad_input_is_refused():
    xs, ys, _, _ = _datasets(2)
    nets = [_tiny_resnet(0), build_model("lenet", 1, 2, seed=0)]
    with pytest.raises(ValueError, match="one architecture"):
        train_side_by_side(nets, xs, ys, generators=[torch.Generator()] * 2, device="cpu", **KW)
    with pytest.raises(ValueError, match="CUDA"):
        train_side_by_side(
            [_tiny_resnet(0)], xs[:1], ys[:1], generators=[torch.Generator()], device="cpu", autocast="bf16", **KW
        )
    with pytest.raises(ValueError, match="generator"):
        train_side_by_side([_tiny_resnet(0)], xs[:1], ys[:1], generators=[], device="cpu", **KW)


def test_under_autocast_batch_norm_sees_float32():
    """bf16 autocast gives batch norm a float32 input (its statistics are float32); checked with
    the CPU's autocast, since the trainer's bf16 path is CUDA's."""
    from nadcore.nets import build_model
    from nadcore.train.side_by_side import batchnorm_in_float32

    net = build_model("densenet121?growth_rate=2", 1, 2, 32, seed=0, check=False)
    seen = []
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    handles = batchnorm_in_float32(net)
    for m in bns:  # registered after: sees what the layer gets
        m.register_forward_pre_hook(lambda mod, inp: seen.append(inp[0].dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        net(torch.randn(4, 1, 32, 32))
    assert len(handles) == len(bns) > 100 and set(seen) == {torch.float32}


def test_under_vmap_batch_norm_sees_the_standard_layout():
    """Runs side by side fold into channels-last convolutions; the batch-norm layers must get
    their input in the standard layout, since cuDNN's batch norm asks for the channels-last one
    and vmap cannot answer (the CPU's vmap raises the same error as CUDA's)."""
    from torch._prims_common import suggest_memory_format
    from torch.func import functional_call, stack_module_state, vmap

    from nadcore.train.side_by_side import _channels_last_batch, batchnorm_in_float32

    nets = [torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)) for _ in range(2)]
    params, buffers = stack_module_state(nets)
    layouts = []

    def check(mod, inp):
        layouts.append(suggest_memory_format(inp[0]))
        inp[0].is_contiguous(memory_format=layouts[-1])  # what cuDNN's batch norm asks

    batchnorm_in_float32(nets[0])
    nets[0][1].register_forward_pre_hook(check)
    xb = _channels_last_batch(torch.randn(2, 5, 3, 8, 8))
    vmap(lambda p, b, x: functional_call(nets[0], (p, b), (x,)))(params, buffers, xb)
    assert layouts == [torch.contiguous_format]
