"""Every fast sampling path equals the plain one (one network at a time) up to float rounding."""
import numpy as np
import pytest
import torch

from nadcore import estimators as est
from nadcore import initialisation as init
from nadcore import nads
from nadcore.lenet_kernels import lenet_gradients, lenet_secant, lenet_supported
from nadcore.models import build_model
from nadcore.resnet_kernels import resnet_secant, resnet_supported


def _plain(name, shape, seeds, method, step=100.0, dtype=torch.float32, x=None):
    m = build_model(name, shape[0], 1, shape[-1], check=False).to(dtype).eval()
    plan = init.init_plan(m)
    x = est.evaluation_point(shape, 0).to(dtype) if x is None else x
    rows = []
    for s in seeds:
        init.initialise(m, s, plan)
        m.to(dtype)
        rows.append(est.input_sensitivity_secant(m, x, step) if method == "secant" else est.input_gradient(m, x))
    return torch.stack(rows), plan, x


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 60941, 61706])
@pytest.mark.parametrize("before", [0, 1])
def test_uniform_f32_is_numpys_float32_stream_bit_for_bit(n, before):
    """Odd counts too (numpy keeps half of the last 64-bit output), and from a generator that
    holds such a half (``before`` = 1 float32 drawn first)."""
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    assert np.array_equal(a.random(before, dtype=np.float32), b.random(before, dtype=np.float32))
    ref, got = a.random(n, dtype=np.float32), np.empty(n, np.float32)
    init.uniform_f32(b, got)
    assert np.array_equal(got, ref)
    # the generator continues identically (normal draws after the uniform part, as for VGG)
    assert np.array_equal(a.standard_normal(9, dtype=np.float32), b.standard_normal(9, dtype=np.float32))
    assert a.bit_generator.state == b.bit_generator.state
    # with a float32 scale per element (the initialisation bounds), still one rounding
    scale = np.random.default_rng(0).uniform(1e-3, 2.0, n).astype(np.float32)
    ref = np.random.default_rng(12).random(n, dtype=np.float32) * scale
    init.uniform_f32(np.random.default_rng(12), got, scale)
    assert np.array_equal(got, ref)


def test_seed_hashing_for_many_networks_is_numpys_seed_sequence():
    """The vectorised SeedSequence (network seeds, and the PCG64 seeding of every network) gives
    numpy's words: entropies of 1 to 7 words (beyond the pool of 4 too), zeros, extremes."""
    from nadcore.utils import derived_seed, derived_seeds, seed_sequence_words

    rng = np.random.default_rng(3)
    for k in range(1, 8):
        ent = rng.integers(0, 2 ** 32, (40, k), dtype=np.uint32)
        ent[0], ent[1] = 0, 2 ** 32 - 1
        got = seed_sequence_words(ent, 9)
        for row, words in zip(ent, got):
            assert np.array_equal(words, np.random.SeedSequence(row.tolist()).generate_state(9, np.uint32))
    for seed in (0, 7, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 70):
        idx = [0, 1, 2, 99, 2 ** 32 - 1]
        assert derived_seeds(seed, idx) == [derived_seed(seed, n) for n in idx]
    assert derived_seeds(1, [2 ** 32, 5]) == [derived_seed(1, 2 ** 32), derived_seed(1, 5)]  # numpy's path
    seeds = est.network_seeds(9, range(20)) + [0, 1, 2 ** 32, 2 ** 64 - 1, 2 ** 64, 2 ** 128 - 1]
    words = init._pcg64_seed_words(seeds)
    for s, w in zip(seeds, words):
        assert np.array_equal(w, np.random.SeedSequence(s).generate_state(4, np.uint64))
    assert init._pcg64_seed_words([1, 2 ** 128]) is None and init._pcg64_seed_words([-1]) is None
    plan = init.init_plan(build_model("logreg", check=False))
    big = [2 ** 128 + 1, 2 ** 64 + 3]                       # numpy seeds these one by one
    got = init.draw_parameters(plan, big)["fc.weight"].reshape(2, -1)
    for s, row in zip(big, got):
        u = np.random.default_rng(s).random(row.numel(), dtype=np.float32)
        b = np.float32(1 / np.sqrt(row.numel()))
        assert np.array_equal(row.numpy(), u * (2 * b) - b)


# an even uniform part followed by a normal one: the native generators, then numpy's, advanced
SYNTHETIC = [("w", (4, 6), "uniform", 0.25), ("b", (4,), "uniform", 0.5), ("v", (5, 3), "normal", 2.0),
             ("c", (3,), "constant", 0.1)]


@pytest.mark.parametrize("name", ["lenet", "vgg11", "resnet18_narrow", "synthetic"])
@pytest.mark.parametrize("use_native", [True, False])
def test_draw_parameters_is_the_plain_formula_bit_for_bit(name, use_native, monkeypatch):
    """Row-wise in-place scaling and threads give exactly numpy's float32 draws scaled by torch:
    u * 2 bound - bound (uniform part first), z * std (normal part); with nadcore.native's
    generators and with numpy's own."""
    from nadcore import native

    if not use_native:
        monkeypatch.setattr(native, "_lib", False)
    plan = SYNTHETIC if name == "synthetic" else init.init_plan(build_model(name, check=False))
    seeds = est.network_seeds(5, range(7))
    n_u = sum(int(np.prod(s)) for _, s, k, _ in plan if k == "uniform")
    n_n = sum(int(np.prod(s)) for _, s, k, _ in plan if k == "normal")
    rows = []
    for s in seeds:
        rng = np.random.default_rng(int(s))
        rows.append((torch.from_numpy(rng.random(n_u, dtype=np.float32)),
                     torch.from_numpy(rng.standard_normal(n_n, dtype=np.float32))))
    ref, ou, on = {}, 0, 0
    for pname, shape, kind, value in plan:
        size = int(np.prod(shape))
        if kind == "uniform":
            ref[pname] = torch.stack([u[ou:ou + size] * (2 * value) - value for u, _ in rows]).reshape(7, *shape)
            ou += size
        elif kind == "normal":
            ref[pname] = torch.stack([z[on:on + size] * value for _, z in rows]).reshape(7, *shape)
            on += size
        else:
            ref[pname] = torch.full((7, *shape), float(value))
    bufs = init.parameter_buffers(plan, 9)
    init.draw_parameters(plan, est.network_seeds(6, range(9)), buffers=bufs)  # fill them once
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for threads, buffers, device in [(1, None, None), (3, None, None), (1, bufs, None), (2, bufs, None)] + [
            (2, init.parameter_buffers(plan, 9, pinned=d == "cuda"), d) for d in devices]:
        got = init.draw_parameters(plan, seeds, threads=threads, buffers=buffers, device=device)
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k].device.type == (device or "cpu")
            assert torch.equal(got[k].cpu(), ref[k]), (name, k, threads, device)


@pytest.mark.parametrize("shape", [(1, 32, 32), (3, 32, 32), (1, 28, 28)])
def test_lenet_secant_kernel_equals_the_plain_secant(shape):
    seeds = est.network_seeds(2, range(3))
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
    seeds = est.network_seeds(3, range(5))
    ref, plan, x = _plain("lenet", (1, 32, 32), seeds, "gradient", dtype=torch.float64)
    P = {k: v.double() for k, v in init.draw_parameters(plan, seeds).items()}
    assert torch.allclose(lenet_gradients(P, x), ref, rtol=1e-10, atol=1e-13 * ref.abs().max())


@pytest.mark.parametrize("C, S", [(1, 32), (3, 32), (1, 31)])
def test_resnet_secant_kernel_equals_the_plain_secant(C, S):
    m = build_model("resnet18_narrow", C, 1, S, seed=3, check=False).double().eval()
    assert resnet_supported(m, (C, S, S))
    x = est.evaluation_point((C, S, S), 0).double()
    # corners, edges and random interior pixels of every channel (all of them take minutes)
    D = C * S * S
    coords = torch.unique(torch.cat([torch.tensor([0, S - 1, S * (S - 1), S * S - 1, 5, S * 5, S * (S - 2) + 2])
                                     + S * S * c for c in range(C)]
                                    + [torch.randperm(D, generator=torch.Generator().manual_seed(C))[:48]]))
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
    """float64: addmm; float32 on the CPU: oneDNN's matrix product (nadcore.utils.linear)."""
    from nadcore.resnet_kernels import _conv, _tap_weights

    g = torch.Generator().manual_seed(side)
    x = torch.randn(5, 7, side, side, generator=g, dtype=torch.float64)
    w, b = torch.randn(6, 7, 3, 3, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
    ref = torch.nn.functional.conv2d(x, w, b, 1, 1)
    x, w, b = x.to(dtype), w.to(dtype), b.to(dtype)
    got = _conv(x, (w, b, (side, _tap_weights(w, side))))
    assert got.dtype == dtype and torch.allclose(got.double(), ref, rtol=tol, atol=tol)
    r = torch.randn_like(ref)
    assert torch.allclose(_conv(x, (w, b, (side, _tap_weights(w, side))), relu=True, add=r.to(dtype)).double(),
                          (ref + r).relu(), rtol=tol, atol=tol)


@pytest.mark.parametrize("stride", [1, 2])
def test_fused_convolutions_equal_the_separate_ops(stride):
    from nadcore.resnet_kernels import _conv
    from nadcore.utils import onednn_applies

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
    assert est.choose_strategy("auto", m, plan, "secant", cpu, (1, 32, 32)) == "fast"
    assert est.choose_strategy("auto", m, plan, "secant", cpu, (1, 32, 32), "bf16") == "loop"
    with pytest.raises(ValueError, match="fast"):
        est.choose_strategy("fast", build_model("mlp", check=False), plan, "secant", cpu, (1, 32, 32))
    with pytest.raises(ValueError, match="strategy"):
        est.choose_strategy("turbo", m, plan, "secant", cpu, (1, 32, 32))


def _cov(r):
    return (r.nads.T.astype(np.float64) * r.eigenvalues) @ r.nads.astype(np.float64)


@pytest.mark.parametrize("method", ["secant", "gradient"])
def test_every_strategy_gives_the_same_estimate(method):
    n = 4 if method == "secant" else 16
    rs = {s: nads.compute_nads("lenet", num_networks=n, seed=4, method=method, strategy=s, workers=1,
                               lanes=1) for s in ("fast", "vmap", "loop")}
    ref = _cov(rs["loop"])
    for s in ("fast", "vmap"):
        assert np.allclose(_cov(rs[s]), ref, rtol=1e-4, atol=1e-6 * np.abs(ref).max()), s
    if method == "secant":
        a, b = (nads.compute_nads("resnet18_narrow", num_networks=2, seed=4, strategy=s, lanes=1)
                for s in ("fast", "loop"))
        assert np.allclose(_cov(a), _cov(b), rtol=1e-4, atol=1e-6 * b.eigenvalues[0])


def test_lanes_equal_worker_processes_and_one_lane():
    kw = dict(num_networks=12, seed=1, method="secant")
    one = nads.compute_nads("lenet", workers=1, lanes=1, **kw)
    lanes = nads.compute_nads("lenet", workers=1, lanes=3, **kw)
    procs = nads.compute_nads("lenet", workers=3, **kw)
    assert lanes.meta["lanes"] == 3 and procs.meta["workers"] == 3
    # the same shares and merge order: threads and processes agree to the last bit
    assert np.array_equal(lanes.eigenvalues, procs.eigenvalues)
    C = _cov(one)
    for r in (lanes, procs):
        assert np.allclose(_cov(r), C, rtol=1e-9, atol=1e-12 * one.eigenvalues[0])
    assert torch.get_num_threads() >= 1


def test_lanes_run_a_callable_model_spec():
    f = lambda c, k: build_model("mlp", c, k)  # noqa: E731
    a = nads.compute_nads(f, num_networks=8, seed=0, method="gradient", lanes=2)
    b = nads.compute_nads(f, num_networks=8, seed=0, method="gradient", lanes=1)
    assert np.allclose(_cov(a), _cov(b), rtol=1e-9, atol=1e-12 * b.eigenvalues[0])


@pytest.mark.parametrize("name", ["lenet", "resnet18_narrow"])
def test_bf16_secant_agrees_with_float32(name):
    seeds = est.network_seeds(0, range(2))
    m = build_model(name, check=False).eval().to(memory_format=torch.channels_last)
    plan = init.init_plan(m)
    x = est.evaluation_point((1, 32, 32), 0)
    batch = est.perturbation_batch(x, 100.0).contiguous(memory_format=torch.channels_last)
    for s in seeds:
        init.initialise(m, s, plan)
        a = est.input_sensitivity_secant(m, x, 100.0, batch=batch)
        b = est.input_sensitivity_secant(m, x, 100.0, batch=batch, precision="bf16")
        assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.999, name
    with pytest.raises(ValueError, match="precision"):
        est.input_sensitivity_secant(m, x, 100.0, batch=batch, precision="fp8")
    with pytest.raises(ValueError, match="precision"):
        nads.compute_nads("lenet", num_networks=4, method="gradient", precision="bf16")


def _sampled(arch, device, precision="float32", n=2, method="secant"):
    got = []
    est.sample_range(arch, (1, 32, 32), 0, 0, n, method, 100.0, device, None,
                     lambda G, idx: got.append(G), precision=precision)
    return np.concatenate(got)


@pytest.mark.parametrize("name", ["resnet18_narrow", "mlp"])
def test_bf16_sampling_uses_each_networks_own_parameters(name):
    """sample_range in bf16 agrees with float32 network by network (autocast keeps bf16 copies of
    parameters while it is active: it must not outlive one network's parameters)."""
    a, b = _sampled(name, "cpu", n=3), _sampled(name, "cpu", "bf16", n=3)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.99, cos


def test_precision_mode_sets_and_restores_the_gpu_flags():
    cd, mm = torch.backends.cudnn, torch.backends.cuda.matmul
    before = cd.allow_tf32, mm.allow_tf32
    for precision, tf32 in (("float32", False), ("tf32", True)):
        with est.precision_mode("cuda", precision):
            assert (cd.allow_tf32, mm.allow_tf32) == (tf32, tf32)
        assert (cd.allow_tf32, mm.allow_tf32) == before
    with est.precision_mode("cpu", "bf16"):
        assert torch.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="precision"):
        with est.precision_mode("cpu", "fp8"):
            pass


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


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_linear_is_the_matrix_product_on_every_path(batched, bias, big, monkeypatch):
    """nadcore.utils.linear: oneDNN's product (float32 CPU, no autograd, at least 2**21
    multiply-adds), MKL's (smaller) and torch's (float64, autograd) all give x @ w^T + b, with w
    contiguous or a transposed view; with autograd the gradient flows."""
    from nadcore.utils import _ONEDNN_MIN_MACS, linear, onednn_applies

    calls = []
    if torch.backends.mkldnn.is_available():
        op = torch.ops.mkldnn._linear_pointwise
        monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", lambda *a: calls.append(1) or op(*a))
    g = torch.Generator().manual_seed(7)
    lead = (3,) if batched else ()
    R, N, K = (128, 128, 160) if big else (37, 11, 19)
    assert (R * N * K >= _ONEDNN_MIN_MACS) == big
    x = torch.randn(*lead, R, K, generator=g, dtype=torch.float64)
    w = torch.randn(*lead, N, K, generator=g, dtype=torch.float64)
    b = torch.randn(*lead, N, generator=g, dtype=torch.float64) if bias else None
    ref = x @ w.transpose(-1, -2) + (0 if b is None else b.unsqueeze(-2))
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
