"""Fast tests of nadcore.data.cifar, nadcore.data.poisoning and nadcore.chapters.cifar10.runs:
loading, poisoning and flipping preserve what they must, and the chapter-4 jobs pair their runs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from stand_ins import chapter_stand_in

from nadcore.book.cache import Cache
from nadcore.book.runner import run_jobs
from nadcore.chapters.cifar10 import runs as cifar10
from nadcore.data import cifar, poisoning
from nadcore.nads import complete_basis


def _orthonormal_rows(k, d, seed=0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return q.T[:k].astype(np.float32)


@pytest.fixture(scope="module")
def small_images():
    rng = np.random.default_rng(1)
    x = rng.random((20, 3, 8, 8)).astype(np.float32)
    y = np.arange(20) % 10
    return x, y


# ---------------------------------------------------------------------------- flipping
def test_complete_basis_is_orthogonal_keeps_nads_and_is_deterministic():
    nads = _orthonormal_rows(63, 64)
    V = complete_basis(nads)
    assert V.shape == (64, 64)
    np.testing.assert_allclose(V @ V.T, np.eye(64), atol=1e-10)
    np.testing.assert_allclose(V[:63], nads, atol=1e-6)
    np.testing.assert_array_equal(complete_basis(nads), V)
    few = complete_basis(np.random.default_rng(0).standard_normal((5, 64)))  # not orthonormal: QR
    np.testing.assert_allclose(few @ few.T, np.eye(64), atol=1e-10)


def test_flip_is_orthogonal_and_an_involution(small_images):
    x, _ = small_images
    U = complete_basis(_orthonormal_rows(63, 64, seed=2))
    xf = poisoning.flip_representation(x, U)
    assert xf.shape == x.shape and xf.dtype == x.dtype
    np.testing.assert_allclose(
        np.linalg.norm(xf.reshape(20, -1), axis=1), np.linalg.norm(x.reshape(20, -1), axis=1), rtol=1e-5
    )
    # per channel too: the flip never mixes colour channels
    np.testing.assert_allclose(np.linalg.norm(xf, axis=(2, 3)), np.linalg.norm(x, axis=(2, 3)), rtol=1e-5)
    np.testing.assert_allclose(poisoning.flip_representation(xf, U), x, atol=1e-5)
    assert not np.allclose(xf, x)


def test_flip_moves_first_nad_to_last():
    U = complete_basis(_orthonormal_rows(64, 64, seed=3))
    x = U[0].reshape(1, 1, 8, 8)
    np.testing.assert_allclose(poisoning.flip_representation(x, U).reshape(-1), U[-1], atol=1e-12)


def test_flip_torch_matches_numpy(small_images):
    x, _ = small_images
    U = complete_basis(_orthonormal_rows(64, 64, seed=4))
    out = poisoning.flip_representation(torch.from_numpy(x), U)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), poisoning.flip_representation(x, U), atol=1e-6)


def test_flip_rejects_non_orthogonal():
    with pytest.raises(ValueError):
        poisoning.flip_representation(np.zeros((1, 1, 4, 4)), np.ones((16, 16)))
    with pytest.raises(ValueError):
        poisoning.flip_representation(np.zeros((1, 1, 4, 4)), _orthonormal_rows(15, 16))


# ---------------------------------------------------------------------------- poisoning
def test_carrier_assignment_matches_authors_layout():
    a = poisoning.carrier_assignment(10, 3)
    assert [t[0] for t in a] == [0] * 6 + [1] * 4
    assert [t[1] for t in a] == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert [t[2] for t in a] == [-1, 1] * 5
    assert len(set(a)) == 10


@pytest.mark.parametrize("index", [0, 5, 62])
def test_poison_sets_component_and_leaves_orthogonal_part(small_images, index):
    x, y = small_images
    nads = _orthonormal_rows(64, 64, seed=5)
    eps = 0.05
    xp = poisoning.poison(x, y, nads, index, eps)
    carriers, signs = poisoning.poison_carriers(nads, index, shape=(8, 8))
    c = carriers[y].reshape(20, -1)
    along = np.einsum("nd,nd->n", xp.reshape(20, -1).astype(np.float64), c)
    np.testing.assert_allclose(along, eps * signs[y], atol=1e-6)
    assert set(np.round(along / eps).astype(int)) == {-1, 1}
    # the change is parallel to the carrier: nothing moves orthogonally to it
    delta = (xp - x).reshape(20, -1).astype(np.float64)
    resid = delta - np.einsum("nd,nd->n", delta, c)[:, None] * c
    assert np.abs(resid).max() < 1e-6
    # the other channels of each image are untouched
    for n in range(20):
        ch = poisoning.carrier_assignment()[y[n]][1]
        others = [k for k in range(3) if k != ch]
        np.testing.assert_array_equal(xp[n, others], x[n, others])


def test_poison_torch_and_index_check(small_images):
    x, y = small_images
    nads = _orthonormal_rows(64, 64, seed=6)
    out = poisoning.poison(torch.from_numpy(x), torch.from_numpy(y), nads, 3, 0.1)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), poisoning.poison(x, y, nads, 3, 0.1), atol=1e-7)
    with pytest.raises(IndexError):
        poisoning.poison(x, y, nads, 63, 0.1)  # needs NAD 64, which does not exist


def test_binarise_labels():
    y = np.arange(10)
    np.testing.assert_array_equal(cifar.binarise_labels(y), [-1] * 5 + [1] * 5)


# ---------------------------------------------------------------------------- loading
def test_loader_finds_subset_and_reports_counts():
    assert cifar.find_subset() is not None, (
        "the project's CIFAR-10 subset (../shared/data/cifar10-subset) is not here: chapters 4 and 5 need it"
    )
    data = cifar.load_cifar10(source="subset")
    d = data.description
    assert d["is_subset"] and d["checksum_verified"]
    assert (d["n_train"], d["n_test"]) == (5170, 1017)
    assert data.x_train.shape == (5170, 3, 32, 32) and data.x_train.dtype == np.float32
    assert 0.0 <= data.x_train.min() and data.x_train.max() <= 1.0
    assert d["train_class_counts"] == [521, 534, 497, 505, 540, 484, 515, 524, 537, 513]
    assert sum(d["test_class_counts"]) == 1017
    s = data.summary()
    assert "5,170" in s and "1,017" in s and "SUBSET" in s
    small = cifar.load_cifar10(source="subset", max_train=100, max_test=50)
    assert small.description["n_train"] == 100 and len(small.y_test) == 50


def test_clear_error_when_nothing_found(tmp_path):
    with pytest.raises(cifar.CIFAR10NotFoundError, match="How to get CIFAR-10"):
        cifar.load_cifar10(root=tmp_path, subset_root=tmp_path)
    with pytest.raises(cifar.CIFAR10NotFoundError):
        cifar.load_cifar10(root=tmp_path, source="full")


def _write_fake_subset(d, digest=None):
    x = np.zeros((4, 32, 32, 3), np.uint8)
    y = np.arange(4, dtype=np.uint8)
    np.savez(d / cifar.SUBSET_FILE, x_train=x, y_train=y, x_test=x, y_test=y)
    if digest is None:
        digest = hashlib.sha256((d / cifar.SUBSET_FILE).read_bytes()).hexdigest()
    (d / "SHA256SUMS").write_text(f"{digest}  {cifar.SUBSET_FILE}\n")


def test_checksum_mismatch_detected(tmp_path):
    _write_fake_subset(tmp_path, digest="0" * 64)
    with pytest.raises(cifar.CIFAR10ChecksumError, match="SHA-256"):
        cifar.load_cifar10(subset_root=tmp_path, source="subset")


def test_checksum_match_and_env_var(tmp_path, monkeypatch):
    _write_fake_subset(tmp_path)
    monkeypatch.setenv("NADCORE_CIFAR_SUBSET", str(tmp_path))
    monkeypatch.delenv("NADCORE_DATA_ROOT", raising=False)
    data = cifar.load_cifar10(source="subset")
    assert data.description["n_train"] == 4 and data.description["path"].startswith(str(tmp_path))


def test_normalise_matches_authors_constants():
    x = np.broadcast_to(np.asarray(cifar.CIFAR10_MEAN, np.float32)[None, :, None, None], (2, 3, 4, 4))
    np.testing.assert_allclose(cifar.normalise(x), 0.0, atol=1e-6)
    t = cifar.normalise(torch.ones(1, 3, 2, 2))
    np.testing.assert_allclose(
        t[0, :, 0, 0].numpy(), (1 - np.array(cifar.CIFAR10_MEAN)) / np.array(cifar.CIFAR10_STD), rtol=1e-6
    )


# ---------------------------------------------------------------------------- experiment plumbing
def test_jobs_pair_their_runs_and_resume_from_the_cache(tmp_path):
    """Plumbing only (a 4-image fake subset, a logistic regression, one epoch)."""
    _write_fake_subset(tmp_path)
    spec = {"subset_root": str(tmp_path)}
    data = cifar.load_cifar10_spec(spec)
    key = {"name": data.description["name"], "sha256": data.description["sha256"]}
    q = _orthonormal_rows(32, 32, seed=8).astype(np.float64)
    nads = np.kron(q, q)  # a cheap 1024 x 1024 orthogonal matrix (rows orthonormal)
    kw = dict(
        seeds=[0, 1],
        nads=nads,
        nads_key={"digest": "test"},
        data_spec=spec,
        data_key=key,
        train=dict(epochs=1, max_lr=0.01, batch_size=2),
        device="cpu",
    )
    jobs = cifar10.cifar_jobs("logreg", ["clean", ("poison", 0), ("poison", 5), "flip"], **kw)
    cache = Cache(tmp_path / "cache")
    res = run_jobs(jobs, cifar10.cifar_job, cache=cache)
    assert [a["test_acc"].shape for a, _ in res] == [(2,)] * 4
    assert "carrier_test_acc" in res[1][0] and res[1][1]["l2_change"] > 0
    calls = []

    def counting(c, **d):  # stands in for cifar_job: the same name and module, so the same code key
        calls.append(c)

    counting.__module__, counting.__name__ = cifar10.cifar_job.__module__, "cifar_job"
    again = run_jobs(jobs, counting, cache=cache)
    assert calls == [] and all(np.array_equal(a["test_acc"], b["test_acc"]) for (a, _), (b, _) in zip(res, again))
    with pytest.raises(ValueError, match="experiment"):
        cifar10.cifar_jobs("logreg", ["rotate"], **kw)


# ---------------------------------------------------------------------------- chapter 4 helpers
def test_leading_energy_and_what_the_flip_moves(small_images):
    x, _ = small_images
    U = complete_basis(_orthonormal_rows(64, 64, seed=9))
    np.testing.assert_allclose(poisoning.leading_energy(x, U, 64), 1.0, rtol=1e-10)  # a full basis
    e = poisoning.leading_energy(x, U, 5)
    assert e.shape == (20,) and np.all((e >= 0) & (e <= 1))
    xf = poisoning.flip_representation(x.astype(np.float64), U)
    # the flip moves the content along the first k NADs to the last k, and back
    np.testing.assert_allclose(poisoning.leading_energy(xf, U[::-1], 5), e, rtol=1e-8)
    np.testing.assert_allclose(poisoning.leading_energy(xf, U, 5), poisoning.leading_energy(x, U[::-1], 5), rtol=1e-8)
    one = np.zeros((1, 2, 8, 8))
    one[0, 1] = U[3].reshape(8, 8)
    assert poisoning.leading_energy(one, U, 3)[0] < 1e-12 and abs(poisoning.leading_energy(one, U, 4)[0] - 1) < 1e-12


def test_carrier_visibility_measures_the_substitution(small_images):
    x, y = small_images
    V = _orthonormal_rows(64, 64, seed=10).astype(np.float64)
    V[0] = 1 / 8.0  # NAD 0 = the constant image (unit norm)
    V = complete_basis(V)
    rows = poisoning.carrier_visibility(x, y, V, [0, 5], eps=0.05)
    assert [r["index"] for r in rows] == [0, 5]
    for r in rows:
        d = (poisoning.poison(x, y, V, r["index"], 0.05) - x).reshape(20, -1)
        assert r["l2_change"] == pytest.approx(np.linalg.norm(d, axis=1).mean(), rel=1e-6)
        assert r["max_abs_change"] == pytest.approx(np.abs(d).max(), rel=1e-6)
        clean = np.linalg.norm(x.reshape(20, -1), axis=1).mean()
        assert r["relative_l2_change"] == pytest.approx(r["l2_change"] / clean, rel=1e-6)
    assert rows[0]["dc_cosine"] == pytest.approx(1.0, abs=1e-9)  # a carrier on the mean brightness
    assert rows[1]["dc_cosine"] < 0.5
    # on images with a positive mean, substituting the brightness component is a big change
    assert rows[0]["l2_change"] > 3 * rows[1]["l2_change"]


def _fake_jobs(tmp_path, experiments, model="logreg", seeds=(0, 1), nads=None, epochs=1):
    _write_fake_subset(tmp_path)
    spec = {"subset_root": str(tmp_path)}
    data = cifar.load_cifar10_spec(spec)
    if nads is None:
        q = _orthonormal_rows(32, 32, seed=8).astype(np.float64)
        nads = np.kron(q, q)
    return cifar10.cifar_jobs(
        model,
        experiments,
        seeds=list(seeds),
        nads=nads,
        data_spec=spec,
        data_key=cifar.cifar_data_key(data),
        train=dict(epochs=epochs, max_lr=0.01, batch_size=2),
        device="cpu",
    )


def test_job_keys_name_the_basis_and_data_but_no_paths(tmp_path):
    a = _fake_jobs(tmp_path, ["clean", "flip", ("poison", 3)])
    q = _orthonormal_rows(32, 32, seed=11).astype(np.float64)
    b = _fake_jobs(tmp_path, ["clean", "flip", ("poison", 3)], nads=np.kron(q, q))
    assert a[0].config == b[0].config  # the clean run does not depend on the NADs
    assert a[1].config != b[1].config and a[2].config != b[2].config
    assert a[1].config["nads"]["digest"] != b[1].config["nads"]["digest"]
    key = a[0].config["data"]
    assert key["n_train"] == 4 and key["sha256"] and str(tmp_path) not in str(key)
    assert a[2].config["index"] == 3 and a[2].config["eps"] == 0.05 and a[1].config["eps"] is None


def test_unique_jobs_drops_repeats_in_order(tmp_path):
    a = _fake_jobs(tmp_path, ["flip", "clean"])
    b = _fake_jobs(tmp_path, ["clean", ("poison", 0)])
    u = cifar10.unique_jobs(a + b)
    assert [j.config["experiment"] for j in u] == ["flip", "clean", "poison"]
    longer = _fake_jobs(tmp_path, ["clean"], epochs=2)
    assert len(cifar10.unique_jobs(a + longer)) == 3  # another training length is another job


def test_result_rows_and_seeds_are_independent(tmp_path):
    """One row per (job, seed); a seed's network does not depend on the other seeds of its job
    (same initialisation and batch order whatever it is trained with: the runs pair up)."""
    jobs = _fake_jobs(tmp_path, ["clean", ("poison", 2)], model="mlp", epochs=3)
    res = run_jobs(jobs, cifar10.cifar_job, cache=Cache(tmp_path / "cache"))
    rows = cifar10.result_rows(jobs, res)
    assert len(rows) == 4 and [(r["experiment"], r["seed"]) for r in rows] == [
        ("clean", 0),
        ("clean", 1),
        ("poison", 0),
        ("poison", 1),
    ]
    assert np.isnan(rows[0]["carrier_test_acc"]) and not np.isnan(rows[2]["carrier_test_acc"])
    assert np.isnan(rows[0]["l2_change"]) and rows[2]["l2_change"] > 0
    assert all(r["epochs"] == 3 and r["model"] == "mlp" for r in rows)
    assert res[0][1]["cpu_seconds"] > 0
    alone = _fake_jobs(tmp_path, ["clean"], model="mlp", seeds=(1,), epochs=3)
    a1, _ = cifar10.cifar_job(alone[0].config, **alone[0].data)
    np.testing.assert_allclose(a1["epoch_acc"][0], res[0][0]["epoch_acc"][1])
    assert a1["test_acc"][0] == res[0][0]["test_acc"][1]


def test_fig7_of_the_papers_network_comes_from_the_campaign_bundle_on_its_settings(tmp_path, monkeypatch):
    import json

    import pandas as pd

    from nadcore.book import profiles
    from nadcore.chapters import campaigns
    from nadcore.chapters.cifar10.claims import CAMPAIGN_CLAIMS
    from nadcore.chapters.cifar10.study import Study

    ch = chapter_stand_in(
        cfg=profiles.resolve("04_cifar10", "smoke"),
        seeds=[0, 1],
        seed=0,
        profile="smoke",
        paper_cfg=profiles.resolve("04_cifar10", "paper"),
    )
    study = Study(ch, "lenet")
    cfg, width = campaigns.profile_settings("cpu", "fig7", "resnet18")
    early = set(cfg["early"])
    rows = [
        dict(
            model="resnet18",
            width=width,
            recipe="authors",
            precision="fp32",
            experiment="clean",
            nad_index=np.nan,
            seed=s,
            epochs=cfg["epochs"],
            train_acc=1.0,
            test_acc=0.5,
            carrier_test_acc=np.nan,
        )
        for s in (0, 1)
    ]
    rows += [
        dict(
            model="resnet18",
            width=width,
            recipe="authors",
            precision="fp32",
            experiment="poison",
            nad_index=i,
            seed=s,
            epochs=cfg["epochs"],
            train_acc=1.0,
            test_acc=0.2 if i in early else 0.48,
            carrier_test_acc=0.9 if i in early else 0.5,
        )
        for s in (0, 1)
        for i in cfg["indices"]
    ]
    (tmp_path / "cpu" / "04_cifar10").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(tmp_path / "cpu" / "04_cifar10" / "fig7.csv", index=False)
    (tmp_path / "cpu" / "provenance.json").write_text(json.dumps({"sessions": [], "jobs": {}}))
    monkeypatch.setenv("NADBOOK_RESULTS", str(tmp_path))

    net, runs = study.campaign("fig7")
    nads = net.published[net.name]
    assert net.name == "ResNet-18 at width 16" and net.model == "resnet18?width=16"
    assert (net.early, net.late, net.cfg["epochs"]) == (cfg["early"], cfg["late"], cfg["epochs"])
    assert nads.meta["source"] == "published" and nads.meta["model"] == "resnet18"
    fig7 = net.fig7(runs)
    assert len(fig7) == 2 * (1 + len(cfg["indices"]))
    hurt, harmless = net.share_lost_early(fig7, nads), net.share_lost_late(fig7, nads)
    assert hurt["interval"].value == pytest.approx((0.5 - 0.2) / 0.4)
    assert harmless["interval"].value == pytest.approx((0.5 - 0.48) / 0.4)
    assert net.carrier_gain(fig7, nads)["interval"].value == pytest.approx(0.7)
    assert list(net.fig7_evidence(fig7)) == [i for i in CAMPAIGN_CLAIMS if i.startswith("fig7")]
    assert hurt["profile"] == "campaign cpu" and hurt["network"] == net.name and hurt["early"] == cfg["early"]
    settings = hurt["settings"]
    assert settings["width"] == 16 and settings["seeds"] == 2 and "campaign 'cpu'" in settings["bundle"]
    assert study.name == "lenet" and study.source == {} and study.cfg is ch.cfg  # the chapter's own study is untouched
    monkeypatch.setenv("NADBOOK_RESULTS", str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match="--figures fig7"):
        study.campaign("fig7")
    # a seed enters once it has the clean baseline and every carrier
    pd.DataFrame(rows[:-1]).to_csv(tmp_path / "cpu" / "04_cifar10" / "fig7.csv", index=False)
    monkeypatch.setenv("NADBOOK_RESULTS", str(tmp_path))
    assert set(study.campaign("fig7")[1]["seed"]) == {0}
    pd.DataFrame([r for r in rows if r["experiment"] == "poison"]).to_csv(
        tmp_path / "cpu" / "04_cifar10" / "fig7.csv", index=False
    )
    with pytest.raises(FileNotFoundError, match="no seed with every fig7 run of resnet18"):
        study.campaign("fig7")


def test_fig8_of_the_papers_cnns_comes_from_the_campaign_bundle_network_by_network(tmp_path, monkeypatch):
    import json

    import pandas as pd

    from nadcore.book import profiles
    from nadcore.chapters import campaigns
    from nadcore.chapters.cifar10.study import Study

    ch = chapter_stand_in(
        cfg=profiles.resolve("04_cifar10", "smoke"),
        seeds=[0, 1],
        seed=0,
        profile="smoke",
        paper_cfg=profiles.resolve("04_cifar10", "paper"),
    )
    study = Study(ch, "lenet")
    assert campaigns.networks("cpu", "fig8") == ["vgg11", "resnet18", "densenet121"]
    cfg, width = campaigns.profile_settings("cpu", "fig8", "resnet18")
    acc = {("resnet18", "clean"): 0.6, ("resnet18", "flip"): 0.4, ("vgg11", "clean"): 0.55, ("vgg11", "flip"): 0.5}
    rows = [
        dict(
            model=m,
            width=campaigns.profile_settings("cpu", "fig8", m)[1],
            recipe="authors",
            precision="fp32",
            experiment=e,
            seed=s,
            epochs=cfg["flip_epochs"],
            train_acc=1.0,
            test_acc=acc[m, e] + 0.01 * s,
        )
        for m in ("resnet18", "vgg11")
        for e in ("clean", "flip")
        for s in (0, 1, 2)
    ]
    rows = rows[:-1]  # VGG-11's seed 2 lacks the flipped run: it does not enter; DenseNet-121 has none
    rows += [dict(r, width=4, test_acc=0.1) for r in rows if r["model"] == "vgg11"]  # another width: left out
    (tmp_path / "cpu" / "04_cifar10").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(tmp_path / "cpu" / "04_cifar10" / "fig8.csv", index=False)
    (tmp_path / "cpu" / "provenance.json").write_text(json.dumps({"sessions": [], "jobs": {}}))
    monkeypatch.setenv("NADBOOK_RESULTS", str(tmp_path))

    nets, runs = study.campaign("fig8")
    assert nets.flip_names == ["VGG-11 at width 32", "ResNet-18 at width 16"]
    assert nets.flip_models == ["vgg11?width=32", "resnet18?width=16"] and nets.cfg["flip_epochs"] == cfg["flip_epochs"]
    fig8 = nets.fig8(runs)
    assert fig8.groupby("model").seed.nunique().to_dict() == {"ResNet-18 at width 16": 3, "VGG-11 at width 32": 2}
    evidence = nets.fig8_evidence(fig8)
    assert list(evidence) == ["fig8-flip-hurts-cnn-vgg11", "fig8-flip-hurts-cnn-resnet18"]
    resnet = evidence["fig8-flip-hurts-cnn-resnet18"]
    assert resnet["interval"].value == pytest.approx(0.2) and resnet["model"] == "ResNet-18 at width 16"
    assert resnet["profile"] == "campaign cpu" and resnet["settings"]["width"] == 16
    assert resnet["settings"]["seeds"] == 3 and evidence["fig8-flip-hurts-cnn-vgg11"]["settings"]["seeds"] == 2
    assert all(resnet["preconditions"].values())
    assert "seeds VGG-11 at width 32: [0, 1]; ResNet-18 at width 16: [0, 1, 2]" in nets.fig8_summary(fig8)
