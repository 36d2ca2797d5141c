"""The committed references see a changed result: chapter 1 run with another seed differs from
tests/reference/01_pooling.json in its checked cells, while the default seed matches it."""
from __future__ import annotations

import json

from conftest import REPO, _load_build_book
from reference_outputs import differences, load_reference

bb = _load_build_book()


def _run(tmp_path, name, **params):
    out = tmp_path / name / "01_pooling.ipynb"
    with bb.chapter_environment(tmp_path / name / "cache", tmp_path / name):
        bb.execute_chapter(REPO / "chapters" / "01_pooling.py", out, {"profile": "smoke", **params},
                           work_dir=tmp_path / name / "running", cwd=REPO, progress_bar=False)
    return json.loads(out.read_text())


def test_a_changed_seed_fails_and_the_default_passes(tmp_path):
    assert load_reference("01_pooling"), "tests/reference/01_pooling.json is missing"
    assert differences("01_pooling", _run(tmp_path, "default")) == []
    changed = differences("01_pooling", _run(tmp_path, "seed1", seed=1))
    assert changed and all("printed something else" in d for d in changed), changed
