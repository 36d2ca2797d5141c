"""nadcore.book.cache: keys that see the config and the code, atomic checksummed entries, no pickle."""

import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nadcore
from nadcore import kernels
from nadcore.book import cache as cache_mod
from nadcore.book.cache import Cache, code_closure, code_fingerprint, job_code_fingerprint
from nadcore.book.nad_jobs import cached_nads
from nadcore.kernels import native
from nadcore.runtime import digest, source_digest
from nadcore.train import lr_at


def test_roundtrip_and_key_depends_on_everything(tmp_path):
    c = Cache(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"a": np.arange(5.0)}, {"note": "x"}

    a1, m1 = c.get_or_compute("f", {"n": 1, "s": [1, 2]}, compute)
    a2, m2 = c.get_or_compute("f", {"s": [1, 2], "n": 1}, compute)  # same config, other key order
    assert len(calls) == 1 and np.array_equal(a1["a"], a2["a"]) and m2 == {"note": "x"}
    assert c.key("f", {"n": 1})[0] != c.key("f", {"n": 2})[0]
    assert c.key("f", {"n": 1})[0] != c.key("g", {"n": 1})[0]
    assert c.key("f", {"n": 1})[1]["code"] == code_fingerprint()
    assert c.key("f", {"n": 1})[1]["kernel_path"] == kernels.path()


def test_key_depends_on_the_kernel_path(tmp_path, monkeypatch):
    """Results of the C kernels and of torch's paths differ in float rounding: neither is
    served for the other."""
    c = Cache(tmp_path)
    keys = {}
    for p in kernels.PATHS:
        monkeypatch.setattr(cache_mod, "kernel_path", lambda p=p: p)
        keys[p] = c.key("f", {"n": 1})
        assert keys[p][1]["kernel_path"] == p
    assert keys["native"][0] != keys["torch"][0]


def test_digest_is_the_one_hash_and_sees_shape_and_dtype():
    a = np.arange(6, dtype=np.float32)
    assert digest(a) == digest(a.copy()) and len(digest(a)) == 16
    assert digest(a) != digest(a.reshape(2, 3)) != digest(a.astype(np.float64))
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})
    import torch

    assert digest(torch.arange(6, dtype=torch.float32)) == digest(a)


def test_interrupted_write_leaves_no_entry(tmp_path):
    c = Cache(tmp_path)
    with pytest.raises(TypeError, match="dtype object"):
        c.save("f", {"n": 1}, {"bad": np.array([{"x": 1}], dtype=object)})
    assert c.load("f", {"n": 1}) is None
    assert not any(p.name.startswith(".") for p in (tmp_path / "f").iterdir())


def test_temporary_folders_of_dead_processes_are_removed(tmp_path):
    c = Cache(tmp_path)
    c.save("f", {"n": 0}, {"a": np.ones(1)})
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    orphan = tmp_path / "f" / f".abc.{dead}.xyz"
    orphan.mkdir()
    (orphan / "arrays.npz").write_bytes(b"half")
    mine = tmp_path / "f" / f".def.{os.getpid()}.xyz"  # a live writer's folder stays
    mine.mkdir()
    c.save("f", {"n": 1}, {"a": np.ones(1)})
    assert not orphan.exists() and mine.exists()


def test_entries_are_plain_npz_and_json_and_damage_is_detected(tmp_path):
    c = Cache(tmp_path)
    d = c.save("f", {"n": 1}, {"a": np.ones(3)}, {"k": 1})
    with np.load(d / "arrays.npz", allow_pickle=False) as z:
        assert np.array_equal(z["a"], np.ones(3))
    meta = json.loads((d / "meta.json").read_text())
    assert meta["key_material"]["config"] == {"n": 1} and len(meta["sha256"]) == 64
    np.savez(d / "arrays.npz", a=np.zeros(3))  # silently different numbers
    with pytest.warns(UserWarning, match="damaged"):
        assert c.load("f", {"n": 1}) is None
    # a meta.json whose key material belongs to another request is refused too
    c.save("f", {"n": 2}, {"a": np.ones(3)})
    other = c.path("f", {"n": 2})
    (d / "meta.json").write_text((other / "meta.json").read_text())
    np.savez(d / "arrays.npz", a=np.ones(3))
    with pytest.warns(UserWarning, match="damaged"):
        assert c.load("f", {"n": 1}) is None


def test_config_must_be_json_like(tmp_path):
    with pytest.raises(TypeError, match="JSON-like"):
        Cache(tmp_path).save("f", {"fn": object()}, {"a": np.ones(1)})


def test_editing_nadcore_code_changes_the_fingerprint_but_figures_do_not(tmp_path):
    pkg = tmp_path / "nadcore"
    src_root = Path(nadcore.__file__).parent
    shutil.copytree(src_root, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_fingerprint(pkg)
    assert before == code_fingerprint(src_root) == code_fingerprint()
    for f in ("chapters/nads/figures.py", "chapters/linear_separability/claims.py", "book/scorecard.py"):
        (pkg / f).write_text((pkg / f).read_text() + "\n# a presentation-only edit\n")
    assert code_fingerprint(pkg) == before
    runs = pkg / "chapters" / "linear_separability" / "runs.py"  # a chapter's experiments compute results
    runs.write_text(runs.read_text() + "\n# an edit\n")
    assert code_fingerprint(pkg) != before
    runs.write_text(runs.read_text().replace("\n# an edit\n", ""))
    train = pkg / Path(inspect.getsourcefile(lr_at)).relative_to(src_root)  # where the recipe lives
    src = train.read_text()
    train.write_text(src.replace("def lr_at(", "def lr_at(  # edited\n", 1))
    edited = code_fingerprint(pkg)
    assert edited != before
    kernel = pkg / (Path(native.__file__).parent / "convpool.c").relative_to(src_root)  # C computes results too
    kernel.write_text(kernel.read_text() + "\n/* an edit */\n")
    assert code_fingerprint(pkg) != edited


def _closure_digests(pkg: Path) -> dict:
    """The code fingerprint of each chapter's job modules, in a copy of nadcore at ``pkg``."""
    mods = {
        "train": "nadcore.chapters.linear_separability.runs",  # directional_job: chapter 3's D(v) runs
        "concat": "nadcore.chapters.underspecification.runs",  # chapter 5's runs
        "nads": "nadcore.book.nad_jobs",  # the NAD estimates: no training
    }
    return {k: source_digest(code_closure(m, pkg)) for k, m in mods.items()}


def test_a_jobs_key_holds_the_code_it_runs_and_nothing_else(tmp_path):
    """Editing a drawing, a table, a claim, a study or the evidence keeps every cached result;
    editing the training loop recomputes the jobs that train and keeps the NAD estimates; editing
    the D(v) generator recomputes chapter 3's runs; the C kernels count where a job reaches them."""
    pkg = tmp_path / "nadcore"
    src_root = Path(nadcore.__file__).parent
    shutil.copytree(src_root, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = _closure_digests(pkg)
    assert before == _closure_digests(src_root)
    from nadcore.chapters.linear_separability.runs import directional_job

    assert job_code_fingerprint(directional_job) == before["train"]
    for f in (
        "chapters/linear_separability/drawing.py",
        "chapters/linear_separability/figures.py",
        "chapters/linear_separability/study.py",
        "chapters/linear_separability/sweeps.py",
        "chapters/linear_separability/claims.py",
        "chapters/underspecification/study.py",
        "book/evidence.py",
        "book/scorecard.py",
        "chapters/campaigns.py",
        "chapters/__init__.py",
    ):
        (pkg / f).write_text((pkg / f).read_text() + "\n# an edit of what draws, tabulates or judges\n")
    assert _closure_digests(pkg) == before
    loops = pkg / "train" / "loops.py"
    loops.write_text(loops.read_text() + "\n# an edit of the training loop\n")
    trained = _closure_digests(pkg)
    assert trained["train"] != before["train"] and trained["concat"] != before["concat"]
    assert trained["nads"] == before["nads"]  # no NAD estimate trains a network
    data = pkg / "data" / "directions.py"
    data.write_text(data.read_text() + "\n# an edit of D(v)\n")
    assert _closure_digests(pkg)["train"] != trained["train"]
    kernel = pkg / "kernels" / "native" / "convpool.c"
    kernel.write_text(kernel.read_text() + "\n/* an edit */\n")
    assert _closure_digests(pkg)["nads"] != before["nads"]


def test_editing_a_user_model_recomputes_its_cached_nads(tmp_path, monkeypatch):
    mod = tmp_path / "mynets_fp.py"
    body = textwrap.dedent("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, c, k):
                super().__init__()
                self.fc = nn.Linear(c * 32 * 32, k)
            def forward(self, x):
                return self.fc(x.flatten(1)) * SCALE
        def factory(c, k):
            return Net(c, k)
        SCALE = 1.0
    """)
    mod.write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mynets_fp", None)
    c = Cache(tmp_path / "cache")
    kw = dict(method="gradient", num_networks=4, cache=c)
    first = cached_nads("mynets_fp:factory", **kw)
    assert len(list((tmp_path / "cache" / "nads").iterdir())) == 1
    again = cached_nads("mynets_fp:factory", **kw)  # unchanged code: served from the cache
    assert len(list((tmp_path / "cache" / "nads").iterdir())) == 1
    np.testing.assert_array_equal(first.eigenvalues, again.eigenvalues)
    # edit the model's forward (the file, as a user would): a new entry, new numbers
    mod.write_text(body.replace("SCALE = 1.0", "SCALE = 3.0"))
    os.utime(mod, ns=(mod.stat().st_atime_ns, mod.stat().st_mtime_ns + 10**9))
    sys.modules.pop("mynets_fp", None)
    edited = cached_nads("mynets_fp:factory", **kw)
    assert len(list((tmp_path / "cache" / "nads").iterdir())) == 2
    np.testing.assert_allclose(edited.eigenvalues[:3], 9 * first.eigenvalues[:3], rtol=1e-5)
