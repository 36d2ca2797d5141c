"""nadcore.native: the fused convolution -> max-pool -> ReLU kernels against torch's ops."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nadcore import estimators as est
from nadcore import initialisation as init
from nadcore import native
from nadcore.models import build_model
from nadcore.train import train_many

needs_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


def _torch_conv_pool_relu(x, w, b, channels_first):
    """The same stage with torch's ops, one model at a time (x: (M, B, H, W, Cin))."""
    out = []
    for m in range(x.shape[0]):
        o = F.relu(F.max_pool2d(F.conv2d(x[m].permute(0, 3, 1, 2), w[m], b[m]), 2))
        out.append(o if channels_first else o.permute(0, 2, 3, 1))
    return torch.stack(out)


@needs_cc
def test_the_kernels_build_here():
    assert native.available()


@pytest.fixture(params=["native", "portable"])
def kernels(request, monkeypatch):
    """The library as built for this CPU, and its portable C path (no AVX-512), which CPUs
    without AVX-512 run."""
    if request.param == "portable":
        monkeypatch.setattr(native, "_lib", native._build(("-mno-avx512f",)))
    return request.param


@needs_cc
@pytest.mark.parametrize("M,B,H,Cin,Cout,channels_first,input_grad", [
    (3, 37, 32, 1, 6, False, False),   # LeNet's first layer (its own forward and backward)
    (3, 37, 32, 1, 6, False, True),    # ... with an input gradient (the generic backward)
    (2, 21, 32, 1, 6, True, False),    # 32 columns, the widest input the first-layer kernel takes
    (2, 9, 33, 1, 6, False, False),    # one more: the generic kernel
    (2, 9, 19, 1, 6, False, False),    # a narrow input (masked loads)
    (2, 9, 24, 1, 4, False, False),   # first-layer backward: 40-value channels-last rows
    (2, 9, 32, 1, 8, False, False),   # ... rows of 112 values, read one value at a time
    (3, 37, 14, 6, 16, True, True),    # LeNet's second layer
    (2, 7, 17, 2, 9, False, True),     # 5x5 rows kernel: a block of 5 pooled columns and one of 1
    (2, 5, 22, 4, 16, True, False),    # ... blocks of 5 and 4
    (2, 5, 11, 3, 20, False, True),    # neither: odd sizes, two vectors of channels
])
def test_forward_and_gradients_equal_torch(M, B, H, Cin, Cout, channels_first, input_grad, kernels):
    g = torch.Generator().manual_seed(H * 100 + Cin)
    x = torch.randn(M, B, H, H, Cin, generator=g).requires_grad_(input_grad)
    w = (0.3 * torch.randn(M, Cout, Cin, 5, 5, generator=g)).requires_grad_()
    b = (0.1 * torch.randn(M, Cout, generator=g)).requires_grad_()
    ours = native.conv_pool_relu(x, w, b, channels_first)
    ref = _torch_conv_pool_relu(x, w, b, channels_first)
    assert ours.shape == ref.shape
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert 0.2 < (ref > 0).float().mean() < 0.98  # both branches of the ReLU are exercised
    gout = torch.randn(ours.shape, generator=g)
    wrt = [x, w, b] if input_grad else [w, b]
    for a, r in zip(torch.autograd.grad(ours, wrt, gout), torch.autograd.grad(ref, wrt, gout)):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-4 * r.abs().max().item())


@needs_cc
@pytest.mark.parametrize("H,Cin,Cout,channels_first", [(14, 6, 16, True), (32, 1, 6, False)])
def test_results_do_not_depend_on_the_number_of_threads(H, Cin, Cout, channels_first, kernels):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 40, H, H, Cin, generator=g, requires_grad=Cin > 1)
    w = torch.randn(2, Cout, Cin, 5, 5, generator=g, requires_grad=True)
    b = torch.randn(2, Cout, generator=g, requires_grad=True)
    wrt = [x, w, b] if Cin > 1 else [w, b]  # LeNet's layers: no input gradient for the first
    runs = []
    threads = torch.get_num_threads()
    try:
        for t in (1, 3):
            torch.set_num_threads(t)
            o = native.conv_pool_relu(x, w, b, channels_first)
            gout = torch.randn(o.shape, generator=torch.Generator().manual_seed(1))
            runs.append([o, *torch.autograd.grad(o, wrt, gout)])
    finally:
        torch.set_num_threads(threads)
    for a, c in zip(*runs):
        assert torch.equal(a, c)


@needs_cc
def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="float32 CPU"):
        native.conv_pool_relu(torch.zeros(1, 2, 8, 8, 1, dtype=torch.float64), torch.zeros(1, 6, 1, 5, 5),
                              torch.zeros(1, 6))
    with pytest.raises(ValueError, match=r"\(M, B, H, W, C\)"):
        native.conv_pool_relu(torch.zeros(2, 8, 8, 1), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    with pytest.raises(ValueError, match="shapes do not fit"):  # Cin 3 against weights for 1
        native.conv_pool_relu(torch.zeros(1, 2, 8, 8, 3), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    with pytest.raises(ValueError, match="shapes do not fit"):  # too small for the kernel
        native.conv_pool_relu(torch.zeros(1, 2, 5, 5, 1), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))


@needs_cc
def test_train_many_with_the_kernels_equals_torchs_path(monkeypatch):
    """train_many of LeNets with the native stage and with torch's grouped convolutions: the same
    training up to float rounding."""
    g = torch.Generator().manual_seed(1)
    M, n = 3, 300
    x = torch.randn(M, n, 1, 32, 32, generator=g)
    y = (torch.rand(M, n, generator=g) > 0.5).long()
    runs = []
    for use in (True, False):
        if not use:
            monkeypatch.setattr(native, "_lib", False)
        models = [build_model("lenet", 1, 2, seed=s) for s in range(M)]
        res = train_many(models, x, y, epochs=2, max_lr=0.05, device="cpu",
                         generators=[torch.Generator().manual_seed(s) for s in range(M)])
        runs.append((models, res))
    for a, c in zip(runs[0][0], runs[1][0]):
        for (na, pa), (_, pc) in zip(a.named_parameters(), c.named_parameters()):
            torch.testing.assert_close(pa, pc, rtol=1e-4, atol=1e-5, msg=na)
    for ra, rc in zip(runs[0][1], runs[1][1]):
        assert ra.iter_loss == pytest.approx(rc.iter_loss, rel=1e-4, abs=1e-6)


@needs_cc
@pytest.mark.parametrize("shape", [(1, 32, 32), (3, 32, 32), (1, 28, 28)])
def test_lenet_input_gradients_equal_autograd(shape, kernels):
    """The kernel of the gradient NADs against autograd on the model itself (float64), for the
    one-channel fast path and the generic one, on parameters as draw_parameters lays them out
    (views into one buffer); and the same numbers with 1 and 3 threads."""
    net = build_model("lenet", shape[0], 1, shape[-1], check=False)
    plan = init.init_plan(net)
    seeds = est.network_seeds(4, range(21))
    params = init.draw_parameters(plan, seeds)
    x = est.evaluation_point(shape, 1)
    ref = torch.stack([est.input_gradient(init.initialise(net.float(), s, plan).double(), x.double())
                       for s in seeds])
    got = native.lenet_input_gradients(params, x)
    assert got.dtype == torch.float64 and got.shape == ref.shape
    assert (((got - ref).norm(dim=1) / ref.norm(dim=1)).max()) < 1e-5
    assert (ref == 0).float().mean() < 0.5  # the input gradient is not trivially zero
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        assert torch.equal(native.lenet_input_gradients(params, x), got)
    finally:
        torch.set_num_threads(threads)


@needs_cc
def test_lenet_input_gradients_refuse_bad_input():
    plan = init.init_plan(build_model("lenet", check=False))
    params = init.draw_parameters(plan, [1, 2])
    with pytest.raises(ValueError, match="float32 CPU"):
        native.lenet_input_gradients(params, torch.zeros(1, 32, 32, dtype=torch.float64))
    with pytest.raises(ValueError, match="not a LeNet for a 1x28x28 input"):
        native.lenet_input_gradients(params, torch.zeros(1, 28, 28))
    with pytest.raises(ValueError, match="inputs up to 4x64x64"):
        native.lenet_input_gradients(params, torch.zeros(1, 68, 68))
    with pytest.raises(ValueError, match="missing"):
        native.lenet_input_gradients({k: v for k, v in params.items() if k != "fc2.weight"},
                                     torch.zeros(1, 32, 32))


@needs_cc
@pytest.mark.parametrize("B", [1, 5, 16, 21])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 60941])
def test_pcg64_uniform_is_numpys_stream_bit_for_bit(B, n, kernels):
    """numpy's ``default_rng(seed).random(n, float32) * mul - sub`` (two roundings) for every
    row, whole vector groups of generators and partial ones, every tail length; nothing past a
    row's end is touched."""
    seeds = est.network_seeds(7, range(B))
    rng = np.random.default_rng(n)
    mul = (rng.random(n) * 0.5).astype(np.float32)
    sub = (mul * rng.random(n)).astype(np.float32)
    out = np.full((B, n + 3), 7.0, np.float32)
    native.pcg64_uniform(init._pcg64_seed_words(seeds), mul * np.float32(2.0 ** -24), sub, out[:, :n],
                         threads=2)
    for row, s in zip(out, seeds):
        ref = np.random.default_rng(int(s)).random(n, dtype=np.float32) * mul - sub
        assert np.array_equal(row[:n].view(np.uint32), ref.view(np.uint32))
    assert (out[:, n:] == 7.0).all()


@needs_cc
def test_pcg64_uniform_refuses_bad_input():
    words = init._pcg64_seed_words([1, 2])
    f = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words.astype(np.int64), f, f, np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words, f, f, np.zeros((2, 4), np.float64))
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words, f[:3], f, np.zeros((2, 4), np.float32))


@needs_cc
def test_switched_off_by_the_environment(tmp_path):
    code = "from nadcore import native; print(native.available())"
    env = {**os.environ, "NADCORE_NATIVE": "0", "NADCORE_NATIVE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False" and not list(tmp_path.iterdir())
    env["NADCORE_NATIVE"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    built = list(tmp_path.iterdir())
    assert len(built) == 1 and built[0].name.startswith("nadcore-native-") and built[0].suffix == ".so"
