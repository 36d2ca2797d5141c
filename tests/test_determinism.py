"""The same key holds the same bits: a NAD estimate does not depend on how its work was shared
out (lanes, running estimates along the way), and the cache serves it whichever way it was made."""

from __future__ import annotations

import numpy as np
import pytest

import nadcore.nads.sampling as sampling
from nadcore.book.cache import Cache
from nadcore.book.nad_jobs import cached_nads
from nadcore.nads import compute_nads

ARRAYS = ("eigenvalues", "nads")
EXTRAS = ("jackknife_nads", "split_half")


def _same_bits(a, b):
    for k in ARRAYS:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k
    for k in EXTRAS:
        x, y = a.extras[k], b.extras[k]
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k


@pytest.mark.parametrize(
    "model,method,points",
    [("lenet", "gradient", 1), ("lenet", "secant", 1), ("logreg", "gradient", 2), ("mlp", "secant", 1)],
)
def test_estimate_independent_of_lanes_and_checkpoints(monkeypatch, model, method, points):
    """One go on one lane, with running estimates on two lanes, and on three lanes: the same
    bytes. Chunks of 4 networks per group make the running estimates fall inside chunks."""
    monkeypatch.setattr(sampling, "CHUNK", 4)
    n = 40
    kw = dict(input_shape=(1, 16, 16), num_networks=n, seed=3, method=method, points=points, device="cpu")
    one = compute_nads(model, lanes=1, **kw)
    two = compute_nads(model, lanes=2, checkpoints=[13, 27], **kw)
    three = compute_nads(model, lanes=3, checkpoints=[9], **kw)
    _same_bits(one, two)
    _same_bits(one, three)
    assert list(two.extras["checkpoint_networks"]) == [13, 27, n]
    assert one.meta["sampling_path"] == two.meta["sampling_path"]


def test_running_estimate_equals_a_smaller_estimate(monkeypatch):
    """The running estimate at 20 networks is the estimate of the first 20 networks (same top
    NADs as a 20-network run, up to the float64 rounding of a different summation)."""
    monkeypatch.setattr(sampling, "CHUNK", 4)
    kw = dict(input_shape=(1, 16, 16), seed=1, method="gradient", device="cpu")
    run = compute_nads("lenet", num_networks=40, checkpoints=[20], lanes=2, **kw)
    small = compute_nads("lenet", num_networks=20, lanes=1, **kw)
    k = 8
    V = run.extras["checkpoint_nads"][0][:k].astype(np.float64)
    W = small.nads[:k].astype(np.float64)
    assert np.sum((V @ W.T) ** 2) / k > 0.999


def test_cache_serves_the_same_bits_either_way(tmp_path, monkeypatch):
    """Computed with running estimates (as chapter 2 does) or without (as chapter 4 alone does),
    the cached NADs are the same bytes; a request with checkpoints the entry lacks recomputes it
    and gets the same main arrays."""
    monkeypatch.setattr(sampling, "CHUNK", 4)
    kw = dict(model="lenet", method="secant", num_networks=24, seed=0, input_shape=(1, 16, 16), device="cpu")
    plain = cached_nads(cache=Cache(tmp_path / "a"), **kw)
    with_ck = cached_nads(cache=Cache(tmp_path / "b"), checkpoints=[8, 16], **kw)
    _same_bits(plain, with_ck)
    c = Cache(tmp_path / "c")
    first = cached_nads(cache=c, **kw)
    again = cached_nads(cache=c, checkpoints=[12], **kw)  # recomputed with the checkpoint
    assert list(again.extras["checkpoint_networks"]) == [12, 24]
    served = cached_nads(cache=c, **kw)  # the entry with checkpoints serves it
    assert "checkpoint_networks" in served.extras
    _same_bits(first, again)
    _same_bits(first, served)


def test_cpu_rounding_compares_a_kernel_path_change_with_a_new_seed():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "cpu_rounding.py"
    spec = importlib.util.spec_from_file_location("cpu_rounding", path)
    cr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cr)
    a = {f"0,12/{s}": {"acc": acc, "w": [float(s), 0.0]} for s, acc in enumerate([0.50, 0.52, 0.54])}
    b = {f"0,12/{s}": {"acc": acc + 0.01, "w": [float(s), 0.1]} for s, acc in enumerate([0.50, 0.52, 0.54])}
    lines = cr.summary(a, b)
    # sd over seeds 0.02: a change of 0.01 is 0.01 / (0.02 sqrt(2) sqrt(2/pi)) = 0.44 of a redraw's
    assert "mean |change| 0.0100 = 0.44 of a new seed's" in lines[1] and "(0.100)" in lines[2]
    assert cr.main(["--quick"]) == 0  # both kernel paths train in child processes
