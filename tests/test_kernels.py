"""nadcore.kernels: every speed-only path against the plain definition it replaces.

Equal up to float rounding, or bit for bit where the definition is a random draw:

* nadcore.kernels.draw (seed hashing, float32 uniforms, parameter draws) against numpy and
  nadcore.runtime.derived_seeds / nadcore.nets.init.draw_parameters;
* nadcore.kernels.lenet, nadcore.kernels.resnet and nadcore.kernels.stacked (the "fast" and
  "vmap" sampling paths) against the estimators of nadcore.nads.estimators, one network at a time;
* nadcore.kernels.cpu.linear against torch.nn.functional.linear;
* nadcore.kernels.batched.vectorised_forward against the vmap reference of
  nadcore.train.batched_forward;
* nadcore.kernels.native (the optional C kernels: conv_pool_relu, lenet_input_gradients,
  pcg64_uniform) against torch's ops and numpy's generator, with the library as built for this CPU
  and its portable C path. These skip where the library is unavailable (no C compiler with OpenMP,
  or NADCORE_NATIVE=0), so that `NADCORE_NATIVE=0 python -m pytest tests/test_kernels.py` tests
  torch's paths alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from nadcore import kernels, nads
from nadcore.kernels import draw, native
from nadcore.kernels.batched import vectorised_forward
from nadcore.kernels.cpu import ONEDNN_MIN_MACS, linear, onednn_applies
from nadcore.kernels.lenet import lenet_gradients, lenet_secant, lenet_supported
from nadcore.kernels.resnet import _conv, _tap_weights, resnet_secant, resnet_supported
from nadcore.kernels.stacked import stacked_gradients, stacked_secant
from nadcore.nads import estimators as est
from nadcore.nads.sampling import Sampler, network_seeds, sampling_path
from nadcore.nets import build_model, init
from nadcore.runtime import derived_seed, derived_seeds, resolve_device
from nadcore.train import batched_forward, train_many

NATIVE = native.available()
needs_native = pytest.mark.skipif(
    not NATIVE, reason="nadcore.kernels.native is unavailable here (no C compiler with OpenMP, or NADCORE_NATIVE=0)"
)


def _plain(name, shape, seeds, method, step=100.0, dtype=torch.float32, x=None):
    """The definition: one network at a time through the plain estimators."""
    m = build_model(name, shape[0], 1, shape[-1], check=False).to(dtype).eval()
    plan = init.init_plan(m)
    x = est.evaluation_point(shape, 0).to(dtype) if x is None else x
    rows = []
    for s in seeds:
        init.initialise(m, s, plan)
        m.to(dtype)
        rows.append(est.input_sensitivity_secant(m, x, step) if method == "secant" else est.input_gradient(m, x))
    return torch.stack(rows), plan, x


def _cov(r):
    return (r.nads.T.astype(np.float64) * r.eigenvalues) @ r.nads.astype(np.float64)


def _pcg64_words(seeds) -> np.ndarray:
    """The words numpy's ``default_rng(s)`` seeds its PCG64 with, by numpy itself."""
    return np.stack([np.random.SeedSequence(int(s)).generate_state(4, np.uint64) for s in seeds])


# --------------------------------------------------------------------------------------------
# nadcore.kernels.draw: seeds and parameters of many networks at once
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 60941, 61706])
@pytest.mark.parametrize("before", [0, 1])
def test_uniform_f32_is_numpys_float32_stream_bit_for_bit(n, before):
    """Odd counts too (numpy keeps half of the last 64-bit output), and from a generator that
    holds such a half (``before`` = 1 float32 drawn first)."""
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    assert np.array_equal(a.random(before, dtype=np.float32), b.random(before, dtype=np.float32))
    ref, got = a.random(n, dtype=np.float32), np.empty(n, np.float32)
    draw.uniform_f32(b, got)
    assert np.array_equal(got, ref)
    # the generator continues identically (normal draws after the uniform part, as for VGG)
    assert np.array_equal(a.standard_normal(9, dtype=np.float32), b.standard_normal(9, dtype=np.float32))
    assert a.bit_generator.state == b.bit_generator.state
    # with a float32 scale per element (the initialisation bounds), still one rounding
    scale = np.random.default_rng(0).uniform(1e-3, 2.0, n).astype(np.float32)
    ref = np.random.default_rng(12).random(n, dtype=np.float32) * scale
    draw.uniform_f32(np.random.default_rng(12), got, scale)
    assert np.array_equal(got, ref)


def test_seed_hashing_for_many_networks_is_numpys_seed_sequence():
    """The vectorised SeedSequence (network seeds, and the PCG64 seeding of every network) gives
    numpy's words: entropies of 1 to 7 words (beyond the pool of 4 too), zeros, extremes; and
    kernels.draw.derived_seeds is runtime.derived_seeds (the definition), number for number."""
    rng = np.random.default_rng(3)
    for k in range(1, 8):
        ent = rng.integers(0, 2**32, (40, k), dtype=np.uint32)
        ent[0], ent[1] = 0, 2**32 - 1
        got = draw.seed_sequence_words(ent, 9)
        for row, words in zip(ent, got):
            assert np.array_equal(words, np.random.SeedSequence(row.tolist()).generate_state(9, np.uint32))
    for seed in (0, 7, 2**32 - 1, 2**32, 2**63 - 1, 2**70):
        idx = [0, 1, 2, 99, 2**32 - 1]
        assert draw.derived_seeds(seed, idx) == derived_seeds(seed, idx) == [derived_seed(seed, n) for n in idx]
        assert sum(w << (32 * i) for i, w in enumerate(draw.uint32_words(seed))) == seed
        assert all(0 <= w < 2**32 for w in draw.uint32_words(seed))
    assert draw.uint32_words(0) == [0]
    assert draw.derived_seeds(1, [2**32, 5]) == derived_seeds(1, [2**32, 5])  # numpy's path
    assert draw.derived_seeds(4, range(3000)) == derived_seeds(4, range(3000))
    assert draw.derived_seeds(4, []) == derived_seeds(4, []) == []
    seeds = derived_seeds(9, range(20)) + [0, 1, 2**32, 2**64 - 1, 2**64, 2**128 - 1]
    assert np.array_equal(draw._pcg64_seed_words(seeds), _pcg64_words(seeds))
    assert draw._pcg64_seed_words([1, 2**128]) is None and draw._pcg64_seed_words([-1]) is None
    plan = init.init_plan(build_model("logreg", check=False))
    big = [2**128 + 1, 2**64 + 3]  # numpy seeds these one by one
    got = draw.draw_parameters(plan, big)["fc.weight"].reshape(2, -1)
    assert torch.equal(got, init.draw_parameters(plan, big)["fc.weight"].reshape(2, -1))
    for s, row in zip(big, got):
        u = np.random.default_rng(s).random(row.numel(), dtype=np.float32)
        b = np.float32(1 / np.sqrt(row.numel()))
        assert np.array_equal(row.numpy(), u * (2 * b) - b)


# an even uniform part followed by a normal one: the native generators, then numpy's, advanced
SYNTHETIC = [
    ("w", (4, 6), "uniform", 0.25),
    ("b", (4,), "uniform", 0.5),
    ("v", (5, 3), "normal", 2.0),
    ("c", (3,), "constant", 0.1),
]


@pytest.mark.parametrize("name", ["lenet", "vgg11", "resnet18_narrow", "synthetic"])
@pytest.mark.parametrize("generators", ["native", "numpy"])
def test_fast_draw_is_the_plain_draw_bit_for_bit(name, generators, monkeypatch):
    """kernels.draw.draw_parameters (row-wise in-place scaling, threads, reused and pinned
    buffers, a device) gives exactly nets.init.draw_parameters, the definition: numpy's float32
    draws scaled in float32, u * 2 bound - bound (uniform part first), z * std (normal part);
    with nadcore.kernels.native's generators and with numpy's own."""
    if generators == "native" and not NATIVE:
        pytest.skip("nadcore.kernels.native is unavailable: only numpy's generators to test")
    if generators == "numpy":
        monkeypatch.setattr(native, "_lib", False)
    plan = SYNTHETIC if name == "synthetic" else init.init_plan(build_model(name, check=False))
    seeds = network_seeds(5, range(7))
    n_u = sum(int(np.prod(s)) for _, s, k, _ in plan if k == "uniform")
    n_n = sum(int(np.prod(s)) for _, s, k, _ in plan if k == "normal")
    rows = []
    for s in seeds:
        rng = np.random.default_rng(int(s))
        rows.append(
            (
                torch.from_numpy(rng.random(n_u, dtype=np.float32)),
                torch.from_numpy(rng.standard_normal(n_n, dtype=np.float32)),
            )
        )
    ref, ou, on = {}, 0, 0
    for pname, shape, kind, value in plan:
        size = int(np.prod(shape))
        if kind == "uniform":
            ref[pname] = torch.stack([u[ou : ou + size] * (2 * value) - value for u, _ in rows]).reshape(7, *shape)
            ou += size
        elif kind == "normal":
            ref[pname] = torch.stack([z[on : on + size] * value for _, z in rows]).reshape(7, *shape)
            on += size
        else:
            ref[pname] = torch.full((7, *shape), float(value))
    plain = init.draw_parameters(plan, seeds)
    assert plain.keys() == ref.keys() and all(torch.equal(plain[k], ref[k]) for k in ref)
    bufs = draw.parameter_buffers(plan, 9)
    draw.draw_parameters(plan, network_seeds(6, range(9)), buffers=bufs)  # fill them once
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for threads, buffers, device in [(1, None, None), (3, None, None), (1, bufs, None), (2, bufs, None)] + [
        (2, draw.parameter_buffers(plan, 9, pinned=d == "cuda"), d) for d in devices
    ]:
        got = draw.draw_parameters(plan, seeds, threads=threads, buffers=buffers, device=device)
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k].device.type == (device or "cpu")
            assert torch.equal(got[k].cpu(), plain[k]), (name, k, threads, device)


# --------------------------------------------------------------------------------------------
# nadcore.kernels.lenet and nadcore.kernels.resnet: the "fast" sampling path
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 32, 32), (3, 32, 32), (1, 28, 28)])
def test_lenet_secant_kernel_equals_the_plain_secant(shape):
    seeds = network_seeds(2, range(3))
    # float64: the kernel is the same function, so it agrees to 1e-10 on every coordinate
    ref, plan, x = _plain("lenet", shape, seeds, "secant", dtype=torch.float64)
    P = {k: v.double() for k, v in init.draw_parameters(plan, seeds).items()}
    got = lenet_secant(P, x, 100.0)
    assert torch.allclose(got, ref, rtol=1e-10, atol=1e-12 * ref.abs().max())
    # float32: float rounding only
    ref32, _, x32 = _plain("lenet", shape, seeds, "secant")
    got32 = lenet_secant(init.draw_parameters(plan, seeds), x32, 100.0)
    assert ((got32 - ref32).norm(dim=1) / ref32.norm(dim=1)).max() < 1e-5


def test_lenet_gradient_kernel_equals_autograd():
    seeds = network_seeds(3, range(5))
    ref, plan, x = _plain("lenet", (1, 32, 32), seeds, "gradient", dtype=torch.float64)
    P = {k: v.double() for k, v in init.draw_parameters(plan, seeds).items()}
    assert torch.allclose(lenet_gradients(P, x), ref, rtol=1e-10, atol=1e-13 * ref.abs().max())
    # float32 (on the CPU the C kernel where it is built, torch's program otherwise)
    ref32, _, x32 = _plain("lenet", (1, 32, 32), seeds, "gradient")
    got32 = lenet_gradients(init.draw_parameters(plan, seeds), x32)
    assert ((got32 - ref32).norm(dim=1) / ref32.norm(dim=1)).max() < 1e-5


@pytest.mark.parametrize("C, S", [(1, 32), (3, 32), (1, 31)])
def test_resnet_secant_kernel_equals_the_plain_secant(C, S):
    m = build_model("resnet18_narrow", C, 1, S, seed=3, check=False).double().eval()
    assert resnet_supported(m, (C, S, S))
    x = est.evaluation_point((C, S, S), 0).double()
    # corners, edges and random interior pixels of every channel (all of them take minutes)
    D = C * S * S
    coords = torch.unique(
        torch.cat(
            [torch.tensor([0, S - 1, S * (S - 1), S * S - 1, 5, S * 5, S * (S - 2) + 2]) + S * S * c for c in range(C)]
            + [torch.randperm(D, generator=torch.Generator().manual_seed(C))[:48]]
        )
    )
    E = torch.zeros(len(coords), D, dtype=x.dtype)
    E[torch.arange(len(coords)), coords] = 100.0
    with torch.no_grad():
        f = lambda z: m(z.reshape(-1, C, S, S)).reshape(-1)  # noqa: E731
        ref = (f(x.reshape(-1) + E) - f(x.reshape(-1) - E)) / 200.0
    got = resnet_secant(m, x, 100.0, coords=coords)
    assert torch.allclose(got, ref, rtol=1e-9, atol=1e-12 * ref.abs().max())


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
@pytest.mark.parametrize("side", [2, 3, 4])
def test_tap_class_products_equal_a_padded_convolution(side, dtype, tol):
    """float64: addmm; float32 on the CPU: oneDNN's matrix product (nadcore.kernels.cpu.linear)."""
    g = torch.Generator().manual_seed(side)
    x = torch.randn(5, 7, side, side, generator=g, dtype=torch.float64)
    w, b = torch.randn(6, 7, 3, 3, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
    ref = torch.nn.functional.conv2d(x, w, b, 1, 1)
    x, w, b = x.to(dtype), w.to(dtype), b.to(dtype)
    got = _conv(x, (w, b, (side, _tap_weights(w, side))))
    assert got.dtype == dtype and torch.allclose(got.double(), ref, rtol=tol, atol=tol)
    r = torch.randn_like(ref)
    assert torch.allclose(
        _conv(x, (w, b, (side, _tap_weights(w, side))), relu=True, add=r.to(dtype)).double(),
        (ref + r).relu(),
        rtol=tol,
        atol=tol,
    )


@pytest.mark.parametrize("stride", [1, 2])
def test_fused_convolutions_equal_the_separate_ops(stride):
    g = torch.Generator().manual_seed(stride)
    cl = torch.channels_last
    x = torch.randn(4, 16, 12, 12, generator=g).contiguous(memory_format=cl)
    w = torch.randn(32, 16, 3, 3, generator=g).contiguous(memory_format=cl)
    b = torch.randn(32, generator=g)
    ref = torch.nn.functional.conv2d(x, w, b, stride, 1)
    r = torch.randn(ref.shape, generator=g).contiguous(memory_format=cl)
    assert onednn_applies(x) == torch.backends.mkldnn.is_available()
    assert torch.allclose(_conv(x, (w, b), stride), ref, rtol=1e-5, atol=1e-5)
    assert torch.allclose(_conv(x, (w, b), stride, relu=True), ref.relu(), rtol=1e-5, atol=1e-5)
    assert torch.allclose(_conv(x, (w, b), stride, relu=True, add=r), (ref + r).relu(), rtol=1e-5, atol=1e-5)


def test_resnet_secant_kernel_in_float32_matches_the_plain_secant():
    """The float32 CPU path (fused oneDNN convolutions, tap-class products, the paste) against
    the model's own forward passes, to float32 rounding."""
    m = build_model("resnet18_narrow", 1, 1, seed=5, check=False).eval()
    x = est.evaluation_point((1, 32, 32), 1)
    coords = torch.tensor([0, 31, 32 * 31, 1023, 5, 32 * 5, 32 * 30 + 2, 500, 517])
    E = torch.zeros(len(coords), 1024)
    E[torch.arange(len(coords)), coords] = 100.0
    with torch.no_grad():
        f = lambda z: m(z.reshape(-1, 1, 32, 32)).reshape(-1).double()  # noqa: E731
        ref = (f(x.reshape(-1) + E) - f(x.reshape(-1) - E)) / 200.0
    got = resnet_secant(m, x, 100.0, coords=coords)
    assert torch.allclose(got, ref, rtol=1e-4, atol=1e-5 * ref.abs().max())


def test_fast_kernels_apply_only_where_they_are_exact():
    assert lenet_supported(build_model("lenet", check=False), (1, 32, 32))
    assert not lenet_supported(build_model("lenet_nopool", check=False), (1, 32, 32))
    assert not lenet_supported(build_model("lenet", 1, 1, 30, check=False), (1, 30, 30))
    assert not resnet_supported(build_model("vgg11", check=False), (1, 32, 32))
    m = build_model("lenet", check=False)
    plan = init.init_plan(m)
    cpu = torch.device("cpu")
    assert sampling_path("auto", m, plan, "secant", cpu, (1, 32, 32)) == "fast"
    assert sampling_path("auto", m, plan, "secant", cpu, (1, 32, 32), "bf16") == "loop"
    assert sampling_path("loop", m, plan, "gradient", cpu, (1, 32, 32)) == "loop"
    assert sampling_path("vmap", m, plan, "secant", cpu, (1, 32, 32)) == "vmap"
    assert sampling_path("auto", m, None, "gradient", cpu, (1, 32, 32)) == "loop"  # no plan: its own init
    with pytest.raises(ValueError, match="fast"):
        sampling_path("fast", build_model("mlp", check=False), plan, "secant", cpu, (1, 32, 32))
    with pytest.raises(ValueError, match="strategy"):
        sampling_path("turbo", m, plan, "secant", cpu, (1, 32, 32))


# --------------------------------------------------------------------------------------------
# nadcore.kernels.stacked: the "vmap" sampling path
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lenet", "mlp", "lenet_nopool"])
def test_stacked_estimators_equal_one_network_at_a_time(name):
    seeds = network_seeds(8, range(4))
    for method in ("gradient", "secant"):
        ref, plan, x = _plain(name, (1, 32, 32), seeds, method)
        model = build_model(name, check=False).eval()
        stacked = init.draw_parameters(plan, seeds)
        if method == "gradient":
            got = stacked_gradients(model, x, stacked)
        else:
            got = stacked_secant(model, est.perturbation_batch(x, 100.0), stacked, 100.0, 256)
        assert got.dtype == torch.float64 and got.shape == ref.shape
        assert ((got - ref).norm(dim=1) / ref.norm(dim=1)).max() < 1e-5, (name, method)


def test_sampler_paths_give_the_same_sensitivities():
    """Sampler.rows, network by network, by every path: "fast" (LeNet's kernels), "vmap"
    (stacked networks) and "loop" (the definition)."""
    cpu = torch.device("cpu")
    idx = np.array([0, 9, 2, 17, 40])
    for method in ("secant", "gradient"):
        rows = {
            s: Sampler("lenet", (1, 32, 32), 3, method, 100.0, cpu, s, 2, "float32").rows(idx)
            for s in ("fast", "vmap", "loop")
        }
        ref = rows["loop"]
        assert ref.shape == (2, len(idx), 1024) and ref.dtype == np.float64
        for s in ("fast", "vmap"):
            err = np.linalg.norm(rows[s] - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
            assert err.max() < 1e-5, (method, s, err.max())


@pytest.mark.parametrize("method", ["secant", "gradient"])
def test_every_strategy_gives_the_same_estimate(method):
    n = 4 if method == "secant" else 16
    rs = {
        s: nads.compute_nads("lenet", num_networks=n, seed=4, method=method, strategy=s, lanes=1)
        for s in ("fast", "vmap", "loop")
    }
    assert {s: r.meta["sampling_path"] for s, r in rs.items()} == {s: s for s in rs}
    ref = _cov(rs["loop"])
    # float32 rounding, which the secant's difference quotient (step 100) amplifies: on an AMD
    # EPYC two of the 1024^2 entries differ by 1.5e-6 of the largest (the C kernel's order of
    # additions against torch's)
    for s in ("fast", "vmap"):
        assert np.allclose(_cov(rs[s]), ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max()), s
    if method == "secant":
        a, b = (
            nads.compute_nads("resnet18_narrow", num_networks=2, seed=4, strategy=s, lanes=1) for s in ("fast", "loop")
        )
        assert np.allclose(_cov(a), _cov(b), rtol=1e-4, atol=1e-6 * b.eigenvalues[0])


def test_batched_gradient_equals_one_network_at_a_time():
    a = nads.compute_nads("lenet", num_networks=40, seed=3, method="gradient", strategy="vmap", lanes=1)
    b = nads.compute_nads("lenet", num_networks=40, seed=3, method="gradient", strategy="loop", lanes=1)
    Ca, Cb = _cov(a), _cov(b)
    assert np.allclose(Ca, Cb, rtol=1e-4, atol=1e-6 * np.abs(Ca).max())


def test_several_networks_per_pass_secant_equals_one_at_a_time():
    a = nads.compute_nads("lenet", num_networks=10, seed=4, method="secant", strategy="vmap", lanes=1)
    b = nads.compute_nads("lenet", num_networks=10, seed=4, method="secant", strategy="loop", lanes=1)
    assert np.allclose(_cov(a), _cov(b), rtol=1e-4, atol=1e-6 * a.eigenvalues[0])


def _sampled(arch, device, precision="float32", n=2, method="secant"):
    return Sampler(arch, (1, 32, 32), 0, method, 100.0, resolve_device(device), "auto", 1, precision).rows(
        np.arange(n)
    )[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_paths_equal_the_cpu():
    for method in ("secant", "gradient"):
        a = nads.compute_nads("lenet", num_networks=16, seed=0, method=method, device="cuda")
        b = nads.compute_nads("lenet", num_networks=16, seed=0, method=method, device="cpu", lanes=1)
        err = np.abs(_cov(a) - _cov(b)).max() / b.eigenvalues[0]
        assert err < 1e-5, (method, err)
    # the big networks' secant: IEEE float32 on the GPU is the CPU's up to rounding; tf32 and
    # bf16 are close (on an H100, ResNet-18 / VGG-11: tf32 7e-4 / 3e-3, bf16 1.3e-2 / 3.8e-2
    # relative to float64; benchmarks/bench_gpu.py)
    for arch in ("resnet18", "vgg11"):
        ref = _sampled(arch, "cpu")
        for precision, tol in (("float32", 1e-4), ("tf32", 1e-2), ("bf16", 1e-1)):
            got = _sampled(arch, "cuda", precision)
            rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            assert rel < tol, (arch, precision, rel)


# --------------------------------------------------------------------------------------------
# nadcore.kernels.cpu.linear
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_linear_is_the_matrix_product_on_every_path(batched, bias, big, monkeypatch):
    """nadcore.kernels.cpu.linear: oneDNN's product (float32 CPU, no autograd, at least 2**21
    multiply-adds), MKL's (smaller) and torch's (float64, autograd) all give
    torch.nn.functional.linear, x @ w^T + b, with w contiguous or a transposed view; with
    autograd the gradient flows."""
    calls = []
    if torch.backends.mkldnn.is_available():
        op = torch.ops.mkldnn._linear_pointwise
        monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", lambda *a: calls.append(1) or op(*a))
    g = torch.Generator().manual_seed(7)
    lead = (3,) if batched else ()
    R, N, K = (128, 128, 160) if big else (37, 11, 19)
    assert (R * N * K >= ONEDNN_MIN_MACS) == big
    x = torch.randn(*lead, R, K, generator=g, dtype=torch.float64)
    w = torch.randn(*lead, N, K, generator=g, dtype=torch.float64)
    b = torch.randn(*lead, N, generator=g, dtype=torch.float64) if bias else None
    if batched:  # the reference, one product per model
        ref = torch.stack([F.linear(x[m], w[m], None if b is None else b[m]) for m in range(3)])
    else:
        ref = F.linear(x, w, b)
    args32 = [t.float() if t is not None else None for t in (x, w, b)]
    assert onednn_applies(*[t for t in args32 if t is not None]) == torch.backends.mkldnn.is_available()
    wt = args32[1].transpose(-1, -2).contiguous().transpose(-1, -2)  # w as a transposed view
    for w32 in (args32[1], wt):
        got32 = linear(args32[0], w32, args32[2])
        assert got32.shape == ref.shape and torch.allclose(got32.double(), ref, rtol=1e-4, atol=1e-4)
    assert len(calls) == (2 * (3 if batched else 1) if big and torch.backends.mkldnn.is_available() else 0)
    assert torch.allclose(linear(x, w, b), ref, rtol=1e-12, atol=1e-12)
    xg = args32[0].clone().requires_grad_(True)
    assert not onednn_applies(xg)
    linear(xg, *args32[1:]).sum().backward()
    assert torch.allclose(xg.grad.double(), w.sum(-2, keepdim=True).expand_as(x), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------------
# nadcore.kernels.batched: train_many's hand-vectorised forward passes
# --------------------------------------------------------------------------------------------
def _vmap_reference(base, names):
    def f_single(plist, xb):
        return functional_call(base, dict(zip(names, plist)), (xb,))

    return vmap(f_single, in_dims=(0, 0))


@pytest.mark.parametrize(
    "spec, channels",
    [
        ("lenet", 1),
        ("lenet", 3),
        ("lenet_nopool", 1),
        ("logreg", 1),
        ("mlp", 3),
        ("nadcore.nets.variants:lenet_avgpool", 1),
        ("nadcore.nets.variants:lenet_strided", 1),
    ],
)
def test_vectorised_forward_equals_the_vmap_reference(spec, channels):
    """Outputs and parameter gradients of M stacked models (on the CPU, LeNet's stages run as
    nadcore.kernels.native.conv_pool_relu where it is built, as grouped convolutions otherwise)."""
    models = [build_model(spec, channels, 2, seed=s) for s in range(3)]
    names = [n for n, _ in models[0].named_parameters()]
    fast = vectorised_forward(models[0], names)
    assert fast is not None
    assert batched_forward(models[0], names) is not None
    params = [torch.stack([dict(m.named_parameters())[n].detach() for m in models]) for n in names]
    x = torch.randn(3, 5, channels, 32, 32, generator=torch.Generator().manual_seed(2))
    gout = torch.randn(3, 5, 2, generator=torch.Generator().manual_seed(3))
    runs = []
    for f in (fast, _vmap_reference(models[0], names)):
        leaves = [p.clone().requires_grad_(True) for p in params]
        out = f(leaves, x)
        runs.append([out, *torch.autograd.grad(out, leaves, gout)])
    assert runs[0][0].shape == (3, 5, 2)
    for name, a, r in zip(["output", *names], *runs):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5 * max(1.0, r.abs().max().item()), msg=name)


def test_vectorised_forward_declines_other_architectures():
    """Where it has no path, train.batched_forward takes the vmap reference."""
    for spec in ["resnet18_narrow", "nadcore.nets.variants:resnet_skip"]:
        m = build_model(spec, check=False)
        names = [n for n, _ in m.named_parameters()]
        assert vectorised_forward(m, names) is None and batched_forward(m, names) is not None
    m = build_model("lenet", check=False)
    assert vectorised_forward(m, ["conv1.weight"]) is None  # not the names it knows


# --------------------------------------------------------------------------------------------
# nadcore.kernels.native: the optional C kernels
# --------------------------------------------------------------------------------------------
def _openmp_compiles() -> bool:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return False
    src = "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n"
    try:
        r = subprocess.run(
            [cc, "-fopenmp", "-x", "c", "-", "-o", os.devnull], input=src, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def test_the_kernels_build_here():
    """Where a C compiler with OpenMP exists (not, e.g., Apple's clang) and nothing switches them
    off, the C kernels build and load."""
    if os.environ.get("NADCORE_NATIVE", "1") == "0":
        pytest.skip("NADCORE_NATIVE=0: the C kernels are switched off")
    if not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    if not _openmp_compiles():
        pytest.skip("the C compiler has no OpenMP")
    assert native.available()
    assert kernels.path() == "native"


def test_switched_off_by_the_environment(tmp_path):
    code = "from nadcore import kernels; from nadcore.kernels import native; print(native.available(), kernels.path())"
    env = {**os.environ, "NADCORE_NATIVE": "0", "NADCORE_NATIVE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "torch"] and not list(tmp_path.iterdir())


@needs_native
def test_switched_on_the_library_is_built_once_into_its_folder(tmp_path):
    code = "from nadcore import kernels; from nadcore.kernels import native; print(native.available(), kernels.path())"
    env = {**os.environ, "NADCORE_NATIVE": "1", "NADCORE_NATIVE_DIR": str(tmp_path)}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["True", "native"]
        built = list(tmp_path.iterdir())
        assert len(built) == 1 and built[0].name.startswith("nadcore-native-") and built[0].suffix == ".so"


@pytest.fixture(params=["native", "portable"])
def c_kernels(request, monkeypatch):
    """The library as built for this CPU, and its portable C path (no AVX-512), which CPUs
    without AVX-512 run (the sources use AVX-512 only where __AVX512F__ is defined)."""
    if not NATIVE:
        pytest.skip("nadcore.kernels.native is unavailable here")
    if request.param == "portable":
        try:
            lib = native._build(("-U__AVX512F__",))
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            pytest.skip(f"the portable C path does not build here: {e}")
        monkeypatch.setattr(native, "_lib", lib)
    return request.param


def _torch_conv_pool_relu(x, w, b, channels_first, pool=2):
    """The same stage with torch's ops, one model at a time (x: (M, B, H, W, Cin)); ``pool=1``:
    no pool (native.conv_relu)."""
    out = []
    for m in range(x.shape[0]):
        o = F.conv2d(x[m].permute(0, 3, 1, 2), w[m], b[m])
        o = F.relu(F.max_pool2d(o, 2) if pool == 2 else o)
        out.append(o if channels_first else o.permute(0, 2, 3, 1))
    return torch.stack(out)


_STAGES = {2: "conv_pool_relu", 1: "conv_relu"}  # the pool's side -> the native function


@needs_native
@pytest.mark.parametrize("pool", [2, 1])
@pytest.mark.parametrize(
    "M,B,H,Cin,Cout,channels_first,input_grad",
    [
        (3, 37, 32, 1, 6, False, False),  # LeNet's first layer (its own forward and backward)
        (3, 37, 32, 1, 6, False, True),  # ... with an input gradient (the generic backward)
        (2, 21, 32, 1, 6, True, False),  # 32 columns, the widest input the first-layer kernel takes
        (2, 9, 33, 1, 6, False, False),  # one more: the generic kernel
        (2, 9, 19, 1, 6, False, False),  # a narrow input (masked loads)
        (2, 9, 24, 1, 4, False, False),  # first-layer backward: 40-value channels-last rows
        (2, 9, 32, 1, 8, False, False),  # ... rows of 112 values, read one value at a time
        (3, 37, 14, 6, 16, True, True),  # LeNet's second layer
        (2, 9, 28, 6, 16, True, True),  # ... without pooling in the first
        (2, 7, 17, 2, 9, False, True),  # 5x5 rows kernel: a block of 5 pooled columns and one of 1
        (2, 5, 22, 4, 16, True, False),  # ... blocks of 5 and 4
        (2, 5, 11, 3, 20, False, True),  # neither: odd sizes, two vectors of channels
    ],
)
def test_conv_pool_relu_forward_and_gradients_equal_torch(
    M, B, H, Cin, Cout, channels_first, input_grad, pool, c_kernels
):
    """With the pool, and without it (conv_relu: LeNet without pooling, 28 x 28 inputs to its
    second layer, blocks of 8 output columns and the remainders)."""
    g = torch.Generator().manual_seed(H * 100 + Cin)
    x = torch.randn(M, B, H, H, Cin, generator=g).requires_grad_(input_grad)
    w = (0.3 * torch.randn(M, Cout, Cin, 5, 5, generator=g)).requires_grad_()
    b = (0.1 * torch.randn(M, Cout, generator=g)).requires_grad_()
    ours = getattr(native, _STAGES[pool])(x, w, b, channels_first)
    ref = _torch_conv_pool_relu(x, w, b, channels_first, pool)
    assert ours.shape == ref.shape
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert 0.2 < (ref > 0).float().mean() < 0.98  # both branches of the ReLU are exercised
    gout = torch.randn(ours.shape, generator=g)
    wrt = [x, w, b] if input_grad else [w, b]
    for a, r in zip(torch.autograd.grad(ours, wrt, gout), torch.autograd.grad(ref, wrt, gout)):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-4 * r.abs().max().item())


@needs_native
@pytest.mark.parametrize("pool", [2, 1])
@pytest.mark.parametrize("H,Cin,Cout", [(32, 1, 6), (14, 6, 16), (11, 3, 20)])
def test_conv_pool_relu_lets_nan_through_as_torch_does(H, Cin, Cout, pool, c_kernels):
    """A NaN input wins its pooling windows and passes the ReLU, in each forward kernel."""
    g = torch.Generator().manual_seed(H)
    x = torch.randn(1, 4, H, H, Cin, generator=g)
    # NaN in the convolution outputs of rows 0-4, columns 1-5 (example 1) and rows 1-5, columns
    # 0-4 (example 2): windows where the NaN comes second (a1) only and third (a2) only
    x[0, 1, 4, 5, 0] = x[0, 2, 5, 4, 0] = float("nan")
    w, b = torch.randn(1, Cout, Cin, 5, 5, generator=g), torch.randn(1, Cout, generator=g)
    ours, ref = getattr(native, _STAGES[pool])(x, w, b, False), _torch_conv_pool_relu(x, w, b, False, pool)
    assert ref.isnan().any() and not ref[0, 0].isnan().any()
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5, equal_nan=True)


@needs_native
@pytest.mark.parametrize("pool", [2, 1])
@pytest.mark.parametrize("H,Cin,Cout,channels_first", [(14, 6, 16, True), (32, 1, 6, False)])
def test_conv_pool_relu_does_not_depend_on_the_number_of_threads(H, Cin, Cout, channels_first, pool, c_kernels):
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
            o = getattr(native, _STAGES[pool])(x, w, b, channels_first)
            gout = torch.randn(o.shape, generator=torch.Generator().manual_seed(1))
            runs.append([o, *torch.autograd.grad(o, wrt, gout)])
    finally:
        torch.set_num_threads(threads)
    for a, c in zip(*runs):
        assert torch.equal(a, c)


@needs_native
def test_conv_pool_relu_refuses_bad_input():
    with pytest.raises(ValueError, match="float32 CPU"):
        native.conv_pool_relu(
            torch.zeros(1, 2, 8, 8, 1, dtype=torch.float64), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6)
        )
    with pytest.raises(ValueError, match=r"\(M, B, H, W, C\)"):
        native.conv_pool_relu(torch.zeros(2, 8, 8, 1), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    with pytest.raises(ValueError, match="shapes do not fit"):  # Cin 3 against weights for 1
        native.conv_pool_relu(torch.zeros(1, 2, 8, 8, 3), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    with pytest.raises(ValueError, match="shapes do not fit"):  # too small for the kernel
        native.conv_pool_relu(torch.zeros(1, 2, 5, 5, 1), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    with pytest.raises(ValueError, match="float32 CPU"):  # the same checks without the pool
        native.conv_relu(torch.zeros(1, 2, 8, 8, 1, dtype=torch.float64), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))


def test_unavailable_kernels_refuse_to_run(monkeypatch):
    """Without the library every entry point says so (callers take their torch path first)."""
    monkeypatch.setattr(native, "_lib", False)
    assert not native.available() and kernels.path() == "torch"
    with pytest.raises(RuntimeError, match="unavailable"):
        native.conv_pool_relu(torch.zeros(1, 2, 8, 8, 1), torch.zeros(1, 6, 1, 5, 5), torch.zeros(1, 6))
    plan = init.init_plan(build_model("lenet", check=False))
    assert not native.takes_lenet_input_gradients(init.draw_parameters(plan, [1]), torch.zeros(1, 32, 32))
    with pytest.raises(RuntimeError, match="unavailable"):
        native.pcg64_uniform(
            _pcg64_words([1]), np.ones(2, np.float32), np.ones(2, np.float32), np.zeros((1, 2), np.float32)
        )


@needs_native
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
        res = train_many(
            models,
            x,
            y,
            epochs=2,
            max_lr=0.05,
            device="cpu",
            generators=[torch.Generator().manual_seed(s) for s in range(M)],
        )
        runs.append((models, res))
    for a, c in zip(runs[0][0], runs[1][0]):
        for (na, pa), (_, pc) in zip(a.named_parameters(), c.named_parameters()):
            torch.testing.assert_close(pa, pc, rtol=1e-4, atol=1e-5, msg=na)
    for ra, rc in zip(runs[0][1], runs[1][1]):
        assert ra.iter_loss == pytest.approx(rc.iter_loss, rel=1e-4, abs=1e-6)


@needs_native
@pytest.mark.parametrize("shape", [(1, 32, 32), (3, 32, 32), (1, 28, 28)])
def test_lenet_input_gradients_equal_autograd(shape, c_kernels):
    """The kernel of the gradient NADs against autograd on the model itself (float64), for the
    one-channel fast path and the generic one, on parameters as kernels.draw.draw_parameters lays
    them out (views into one buffer); and the same numbers with 1 and 3 threads."""
    net = build_model("lenet", shape[0], 1, shape[-1], check=False)
    plan = init.init_plan(net)
    seeds = network_seeds(4, range(21))
    params = draw.draw_parameters(plan, seeds)
    x = est.evaluation_point(shape, 1)
    assert native.takes_lenet_input_gradients(params, x)
    ref = torch.stack([est.input_gradient(init.initialise(net.float(), s, plan).double(), x.double()) for s in seeds])
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


@needs_native
def test_lenet_input_gradients_refuse_bad_input():
    plan = init.init_plan(build_model("lenet", check=False))
    params = draw.draw_parameters(plan, [1, 2])
    assert not native.takes_lenet_input_gradients(params, torch.zeros(1, 68, 68))
    with pytest.raises(ValueError, match="float32 CPU"):
        native.lenet_input_gradients(params, torch.zeros(1, 32, 32, dtype=torch.float64))
    with pytest.raises(ValueError, match="not a LeNet for a 1x28x28 input"):
        native.lenet_input_gradients(params, torch.zeros(1, 28, 28))
    with pytest.raises(ValueError, match="inputs up to 4x64x64"):
        native.lenet_input_gradients(params, torch.zeros(1, 68, 68))
    with pytest.raises(ValueError, match="missing"):
        native.lenet_input_gradients({k: v for k, v in params.items() if k != "fc2.weight"}, torch.zeros(1, 32, 32))


@needs_native
@pytest.mark.parametrize("B", [1, 5, 16, 21])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 60941])
def test_pcg64_uniform_is_numpys_stream_bit_for_bit(B, n, c_kernels):
    """numpy's ``default_rng(seed).random(n, float32) * mul - sub`` (two roundings) for every
    row, whole vector groups of generators and partial ones, every tail length; nothing past a
    row's end is touched."""
    seeds = network_seeds(7, range(B))
    rng = np.random.default_rng(n)
    mul = (rng.random(n) * 0.5).astype(np.float32)
    sub = (mul * rng.random(n)).astype(np.float32)
    out = np.full((B, n + 3), 7.0, np.float32)
    native.pcg64_uniform(_pcg64_words(seeds), mul * np.float32(2.0**-24), sub, out[:, :n], threads=2)
    for row, s in zip(out, seeds):
        ref = np.random.default_rng(int(s)).random(n, dtype=np.float32) * mul - sub
        assert np.array_equal(row[:n].view(np.uint32), ref.view(np.uint32))
    assert (out[:, n:] == 7.0).all()


@needs_native
def test_pcg64_uniform_refuses_bad_input():
    words = _pcg64_words([1, 2])
    f = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words.astype(np.int64), f, f, np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words, f, f, np.zeros((2, 4), np.float64))
    with pytest.raises(ValueError, match="need words"):
        native.pcg64_uniform(words, f[:3], f, np.zeros((2, 4), np.float32))
