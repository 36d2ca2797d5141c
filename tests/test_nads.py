import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from nadcore import estimators as est
from nadcore import nads, published
from nadcore.cache import Cache
from nadcore.models import ModelSpecError, build_model


def _covariance(r):
    return (r.nads.T.astype(np.float64) * r.eigenvalues) @ r.nads.astype(np.float64)


def test_autograd_equals_small_step_finite_difference_float64():
    # ReLU networks are piecewise linear, so a central difference with step h equals the gradient
    # exactly unless a ReLU or max-pool switch lies within +-h of x along that axis. At h = 1e-3
    # that happens for a handful of LeNet's 1024 pixels (2 with this seed); at 1e-5 for none.
    torch.manual_seed(0)
    for name in ["lenet", "mlp"]:
        m = build_model(name).double().eval()
        x = est.evaluation_point((1, 32, 32), 3).double()
        g = est.input_gradient(m, x)
        atol = 1e-9 * g.abs().max().item()
        fd = est.input_sensitivity_secant(m, x, step=1e-3)
        close = torch.isclose(g, fd, rtol=1e-6, atol=atol)
        assert close.float().mean() > 0.99, name
        assert (g - fd).norm() / g.norm() < 1e-2, name
        fd_tiny = est.input_sensitivity_secant(m, x, step=1e-5)
        assert torch.allclose(g, fd_tiny, rtol=1e-6, atol=atol), name


def test_secant_equals_gradient_for_a_linear_model_at_any_step():
    m = build_model("logreg").double().eval()
    x = est.evaluation_point((1, 32, 32), 0).double()
    assert torch.allclose(est.input_gradient(m, x), est.input_sensitivity_secant(m, x, 100.0))


def test_batched_gradient_equals_one_network_at_a_time():
    a = nads.compute_nads("lenet", num_networks=40, seed=3, method="gradient", strategy="vmap", workers=1)
    b = nads.compute_nads("lenet", num_networks=40, seed=3, method="gradient", strategy="loop", workers=1)
    Ca, Cb = _covariance(a), _covariance(b)
    assert np.allclose(Ca, Cb, rtol=1e-4, atol=1e-6 * np.abs(Ca).max())


def test_several_networks_per_pass_secant_equals_one_at_a_time():
    a = nads.compute_nads("lenet", num_networks=10, seed=4, method="secant", strategy="vmap", workers=1)
    b = nads.compute_nads("lenet", num_networks=10, seed=4, method="secant", strategy="loop", workers=1)
    assert np.allclose(_covariance(a), _covariance(b), rtol=1e-4, atol=1e-6 * a.eigenvalues[0])


def test_worker_processes_give_the_same_estimate():
    a = nads.compute_nads("lenet", num_networks=24, seed=1, method="secant", workers=1, lanes=1)
    b = nads.compute_nads("lenet", num_networks=24, seed=1, method="secant", workers=2)
    c = nads.compute_nads("lenet", num_networks=24, seed=1, method="secant", workers=1, lanes=2)
    for r in (b, c):
        assert np.allclose(_covariance(a), _covariance(r), rtol=1e-6, atol=1e-9 * a.eigenvalues[0])


def test_logreg_nads_are_isotropic():
    # LogReg's sensitivity is its weight vector, w_i ~ U(-1/sqrt(D), 1/sqrt(D)) i.i.d., so
    # E[g g^T] = I / (3 D): every direction is a NAD. The sample spectrum must be flat up to the
    # Marchenko-Pastur spread for D/N = 1/4: eigenvalues within (1 -+ 1/2)^2 of 1/(3D).
    r = nads.compute_nads("logreg", num_networks=4096, seed=0, method="gradient", workers=1)
    D = 1024
    lam = r.eigenvalues * 3 * D
    assert lam.mean() == pytest.approx(1.0, rel=0.02)
    assert lam.max() < 1.5 ** 2 * 1.1 and lam.min() > 0.5 ** 2 * 0.8


@pytest.fixture(scope="module")
def secant512():
    return nads.compute_nads("lenet", num_networks=512, seed=0, method="secant")


def test_secant_lenet_matches_published_nads_and_gradient_does_not(secant512):
    # Measured with this test's seed (nadcore 0.1; 0.2 draws the same networks): overlap of 512-network secant NADs with the
    # authors' (10,000 networks) is 0.87 / 0.68 / 0.62 at k = 1 / 16 / 64, rising to 0.94 / 0.78 /
    # 0.71 at 1,024 networks; 128 networks give 0.38 / 0.40 / 0.41. Chance is k/D = 0.001 / 0.016
    # / 0.06. The thresholds sit between the 128- and 512-network values, so a wrong step, a wrong
    # sign convention or a broken accumulation fails. Exact-gradient NADs (2,048 networks) stay
    # near chance at k=16 (README of the published NADs: about 0.03 even at 10,000 networks).
    P = published.load_published_nads("lenet")
    s = secant512
    assert nads.subspace_overlap(s.nads, P.nads, 1) > 0.7
    assert nads.subspace_overlap(s.nads, P.nads, 16) > 0.5
    assert nads.subspace_overlap(s.nads, P.nads, 64) > 0.5
    g = nads.compute_nads("lenet", num_networks=2048, seed=0, method="gradient", workers=1)
    assert nads.subspace_overlap(g.nads, P.nads, 16) < 0.2


def test_jackknife_interval_covers_the_overlap_and_shrinks_with_networks(secant512):
    P = published.load_published_nads("lenet")
    small = nads.compute_nads("lenet", num_networks=128, seed=0, method="secant", workers=1)
    big = secant512
    assert small.extras["jackknife_nads"].shape == (nads.GROUPS, nads.JACKKNIFE_K, 1024)
    v1, lo1, hi1 = nads.overlap_interval(small, P.nads, 16)
    v2, lo2, hi2 = nads.overlap_interval(big, P.nads, 16)
    assert lo1 <= v1 <= hi1 and lo2 <= v2 <= hi2 and v2 > v1
    assert hi2 - lo2 < hi1 - lo1


def test_several_evaluation_points_average_the_gradient_covariance():
    one = nads.compute_nads("lenet", num_networks=32, seed=0, method="gradient", workers=1)
    four = nads.compute_nads("lenet", num_networks=32, seed=0, method="gradient", workers=1, points=4)
    # point 0 is the authors' single point: the 4-point estimate includes the 1-point one
    assert four.meta["points"] == 4 and one.meta["points"] == 1
    assert nads.subspace_overlap(one.nads, four.nads, 1) < 0.99
    pts = est.evaluation_points((1, 32, 32), 0, 4)
    assert torch.equal(pts[0], est.evaluation_point((1, 32, 32), 0))
    assert not torch.equal(pts[1], pts[2])


def test_checkpoints_record_running_estimates():
    r = nads.compute_nads("lenet", num_networks=64, seed=0, method="gradient", checkpoints=[16, 32],
                          workers=1)
    assert list(r.extras["checkpoint_networks"]) == [16, 32, 64]
    assert r.extras["checkpoint_nads"].shape == (3, 64, 1024)
    sh = r.extras["checkpoint_split_half"]
    finite = sh[np.isfinite(sh)]  # NaN where k exceeds the networks in a half
    assert sh.shape == (3, len(nads.OVERLAP_KS)) and np.all((finite >= 0) & (finite <= 1 + 1e-9))
    assert np.isfinite(sh[-1, :2]).all() and np.isnan(sh[-1, -1])
    assert np.array_equal(r.extras["split_half"], sh[-1], equal_nan=True)  # recorded with or without checkpoints
    # the last running estimate is the final estimate
    assert nads.subspace_overlap(r.extras["checkpoint_nads"][-1], r.nads, 16) == pytest.approx(1.0, abs=1e-4)


def test_result_is_orthonormal_and_sorted():
    r = nads.compute_nads("lenet", num_networks=32, seed=0, method="gradient", workers=1)
    U = r.nads.astype(np.float64)
    assert np.allclose(U @ U.T, np.eye(1024), atol=1e-4)
    assert np.all(np.diff(r.eigenvalues) <= 1e-12)


@pytest.mark.parametrize("D", [300, 1024])
def test_accumulator_is_the_plain_second_moment_per_group(D):
    """Lower-triangle panels, flushes at any row count, merging: the plain (1/n) sum g g^T."""
    from nadcore.nads import GROUPS, _Accumulator

    G = np.random.default_rng(D).standard_normal((700, D))
    a, b = _Accumulator(D), _Accumulator(D)
    a.add(G[:450], np.arange(450))
    b.add(G[450:], np.arange(450, 700))
    a.merge(b)
    idx = np.arange(700)
    for groups in (None, [0, 3, 5]):
        sel = np.isin(idx % GROUPS, range(GROUPS) if groups is None else groups)
        ref = G[sel].T @ G[sel] / sel.sum()
        assert np.allclose(a.covariance(groups), ref, rtol=1e-12, atol=1e-12)


def test_subspace_overlap():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((256, 256)))
    U = Q.T
    assert nads.subspace_overlap(U, U, 16) == pytest.approx(1.0)
    assert nads.subspace_overlap(U[:16], U[16:32], 16) == pytest.approx(0.0, abs=1e-12)
    R, _ = np.linalg.qr(rng.standard_normal((256, 256)))
    assert nads.subspace_overlap(U, R.T, 64) == pytest.approx(64 / 256, rel=0.25)
    with pytest.raises(ValueError):
        nads.subspace_overlap(U[:4], U, 8)


def test_bad_inputs_are_rejected_clearly():
    with pytest.raises(ValueError, match="method"):
        nads.compute_nads("lenet", num_networks=4, method="jacobian")
    with pytest.raises(ValueError, match="num_networks"):
        nads.compute_nads("lenet", num_networks=1)
    with pytest.raises(ValueError, match="step"):
        nads.compute_nads("lenet", num_networks=4, step=0)
    with pytest.raises(ModelSpecError, match="expected \\(2, 1\\)"):
        nads.compute_nads(lambda c, k: build_model("lenet", c, 10), num_networks=4)


def test_save_load_roundtrip_without_pickle(tmp_path):
    r = nads.compute_nads("logreg", num_networks=8, method="gradient", workers=1)
    p = r.save(tmp_path / "x.npz")
    with np.load(p, allow_pickle=False) as z:
        assert z["nads"].shape == (1024, 1024) and z["eigenvalues"].shape == (1024,)
        assert json.loads(str(z["meta"]))["networks"] == 8
    q = nads.NADResult.load(p)
    assert np.array_equal(q.nads, r.nads) and q.meta == r.meta


def test_cached_nads_hits_and_detects_damage(tmp_path):
    cache = Cache(tmp_path)
    a = nads.cached_nads("lenet", "gradient", 16, seed=2, cache=cache, workers=1)
    files = list(tmp_path.rglob("arrays.npz"))
    assert len(files) == 1
    b = nads.cached_nads("lenet", "gradient", 16, seed=2, cache=cache, workers=1)
    assert np.array_equal(a.nads, b.nads)
    data = bytearray(files[0].read_bytes())
    data[-100] ^= 0xFF
    files[0].write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="damaged cache entry"):
        c = nads.cached_nads("lenet", "gradient", 16, seed=2, cache=cache, workers=1)
    assert np.allclose(c.eigenvalues, a.eigenvalues)


def test_published_loader(tmp_path):
    P = published.load_published_nads("LeNet")
    assert P.nads.shape == (1023, 1024)
    assert np.allclose(np.linalg.norm(P.nads, axis=1), 1, atol=1e-5)
    assert np.all(np.diff(P.eigenvalues) <= 0)
    src = published.published_nads_root()
    for f in ["LeNet_NADs.npy", "LeNet_eigenvals.npy", "SHA256SUMS"]:
        shutil.copy(src / f, tmp_path / f)
    arr = np.load(tmp_path / "LeNet_NADs.npy")
    arr[0, 0] += 1
    np.save(tmp_path / "LeNet_NADs.npy", arr)
    with pytest.raises(ValueError, match="checksum mismatch"):
        published.load_published_nads("lenet", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="NADCORE_PUBLISHED_NADS"):
        published.load_published_nads("lenet", root=tmp_path / "nothing")
    U = nads.complete_basis(P.nads)
    assert np.allclose(U @ U.T, np.eye(1024), atol=1e-5)


def test_cli_writes_the_documented_file(tmp_path):
    out = tmp_path / "n.npz"
    run = subprocess.run([sys.executable, "-m", "nadcore", "nads", "--model", "lenet", "--input-shape",
                          "1,32,32", "--networks", "8", "--seed", "1", "--method", "gradient",
                          "--device", "cpu", "--out", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    with np.load(out, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        assert z["nads"].shape == (1024, 1024)
    for key in ["model", "input_shape", "networks", "seed", "method", "step", "device",
                "sampling_seconds", "networks_per_second", "nadcore_version", "torch_version", "points"]:
        assert key in meta
    bad = subprocess.run([sys.executable, "-m", "nadcore", "nads", "--model", "nonet", "--out",
                          str(tmp_path / "b.npz")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown model 'nonet'" in bad.stderr
    assert not (tmp_path / "b.npz").exists()


def test_auto_workers_probe_keeps_small_jobs_in_process_and_checkpoints_intact():
    a = nads.compute_nads("lenet", num_networks=20, seed=1, workers=1, checkpoints=[4, 8, 12])
    b = nads.compute_nads("lenet", num_networks=20, seed=1, workers="auto", checkpoints=[4, 8, 12])
    assert b.meta["workers"] == 1  # a few seconds of work never pays for worker start-up
    assert list(b.extras["checkpoint_networks"]) == [4, 8, 12, 20]
    assert np.array_equal(a.extras["checkpoint_split_half"], b.extras["checkpoint_split_half"], equal_nan=True)
    assert np.allclose(_covariance(a), _covariance(b), rtol=1e-9, atol=1e-12 * a.eigenvalues[0])


def test_leave_one_group_out_subspaces_match_a_full_eigendecomposition():
    acc = nads._Accumulator(1024)
    from nadcore import estimators as e
    e.sample_range("lenet", (1, 32, 32), 0, 0, 256, "gradient", 100.0, "cpu", None, acc.add)
    _, full = nads.top_eigenvectors(acc.covariance())
    for g in (0, 5):
        C = acc.covariance([h for h in range(nads.GROUPS) if h != g])
        fast = nads._top_subspace(C, full[:nads.JACKKNIFE_K + 32], nads.JACKKNIFE_K)
        _, exact = nads.top_eigenvectors(C, nads.JACKKNIFE_K)
        for k in (1, 16, 64):
            assert nads.subspace_overlap(fast, exact, k) > 0.999, (g, k)


def test_split_half_is_nan_beyond_the_rank_of_a_half():
    r = nads.compute_nads("lenet", num_networks=20, seed=0, method="gradient")
    sh = dict(zip(nads.OVERLAP_KS, r.extras["split_half"]))
    assert np.isfinite(sh[1]) and np.isfinite(sh[4])  # 10 networks per half: rank 10
    assert np.isnan(sh[16]) and np.isnan(sh[64])  # past it the eigenvectors are arbitrary


def test_nads_past_the_rank_are_a_stable_completion():
    """An N-network estimate has rank N; its NADs past N are complete_basis's completion, which a
    float-rounding perturbation of the estimate moves only slightly (an eigenbasis of the
    degenerate null space could turn anywhere)."""
    r = nads.compute_nads("lenet", num_networks=12, seed=0, method="gradient")
    U = r.nads.astype(np.float64)
    assert np.allclose(U @ U.T, np.eye(len(U)), atol=1e-5)
    assert np.all(r.eigenvalues[12:] == 0)
    noisy = U[:12] + 1e-7 * np.random.default_rng(1).standard_normal(U[:12].shape)
    V = nads.complete_basis(noisy)
    assert np.abs(V[12:] - nads.complete_basis(U[:12])[12:]).max() < 1e-4
    assert np.abs(V[12:] - U[12:]).max() < 1e-4
