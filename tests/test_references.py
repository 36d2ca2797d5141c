"""The committed references see a changed result: chapter 1 run with another seed differs from
tests/reference/01_pooling.json in its checked cells, while the default seed matches it."""

from __future__ import annotations

import json

from conftest import REPO, _load_build_book
from reference_outputs import differences, load_reference, texts_agree

bb = _load_build_book()


def _run(tmp_path, name, stem="01_pooling", **params):
    out = tmp_path / name / f"{stem}.ipynb"
    with bb.chapter_environment(tmp_path / name / "cache", tmp_path / name):
        bb.execute_chapter(
            REPO / "chapters" / f"{stem}.py",
            out,
            {"profile": "smoke", **params},
            work_dir=tmp_path / name / "running",
            cwd=REPO,
            progress_bar=False,
        )
    return json.loads(out.read_text())


def test_a_changed_seed_fails_and_the_default_passes(tmp_path):
    assert load_reference("01_pooling"), "tests/reference/01_pooling.json is missing"
    assert differences("01_pooling", _run(tmp_path, "default")) == []
    changed = differences("01_pooling", _run(tmp_path, "seed1", seed=1))
    assert changed and all("printed something else" in d for d in changed), changed


def test_a_changed_seed_fails_where_the_numbers_are_trained_near_chance(tmp_path):
    """Chapter 5's smoke runs train near chance with two seeds, and those cells (``near-chance``)
    pin no decimal: another seed must still fail the chapter, through its exact cells (the NADs,
    drawn from the seed)."""
    changed = differences("05_underspecification", _run(tmp_path, "seed1", "05_underspecification", seed=1))
    assert changed and all("printed something else" in d for d in changed), changed
    exact = [f"Cell {r['cell']}:" for r in load_reference("05_underspecification") if not r["near_chance"]]
    assert any(c in d for d in changed for c in exact), changed


def test_trained_numbers_may_differ_a_little_and_nothing_else():
    ref = (
        "**reproduced** - Fig. 7. Criterion: gap >= 0.05. Measured 0.097 [0.051, 0.145] "
        "(t-interval over seeds, 2 seeds); the whole interval satisfies the criterion."
    )
    # another CPU: numbers within 0.02 + 5%, and the verdict computed from them
    other_cpu = (
        ref.replace("0.097 [0.051, 0.145]", "0.096 [0.043, 0.148]")
        .replace("**reproduced**", "**inconclusive**")
        .replace("the whole interval satisfies the criterion", "the interval straddles the threshold")
    )
    assert texts_agree(ref, other_cpu)
    assert texts_agree("acc    0.343  0.267\n", "acc    0.345   0.264\n")  # column widths follow
    # with 2 seeds a t-interval's ends move by up to half its width (seen between two CPUs)
    wide = ref.replace("0.097 [0.051, 0.145]", "0.0165 [-0.0153, 0.0483]")
    assert texts_agree(wide, wide.replace("0.0165 [-0.0153, 0.0483]", "0.016 [-0.0602, 0.0922]"))
    assert not texts_agree(wide, wide.replace("0.0165 [-0.0153, 0.0483]", "0.016 [-0.0602, 0.4922]"))
    # two seeds that happen to coincide give an interval of width 0: the reference's width counts
    assert texts_agree(wide, wide.replace("0.0165 [-0.0153, 0.0483]", "0.019 [0.019, 0.019]"))
    assert not texts_agree(wide, wide.replace("0.0165 [-0.0153, 0.0483]", "0.119 [0.119, 0.119]"))
    assert not texts_agree(ref, ref.replace("0.097", "0.2"))  # a result that moved
    assert not texts_agree(ref, ref.replace("0.097", "-0.097"))  # a flipped sign
    assert not texts_agree(ref, ref.replace("2 seeds", "3 seeds"))  # integers: exactly
    assert not texts_agree(ref, ref.replace("Fig. 7", "Fig. 8"))
    assert not texts_agree(ref, ref.replace(">= 0.05", "<= 0.05"))  # text: exactly
    assert not texts_agree("a 0.5 b 0.5", "a 0.5")
    # a table's "mean ± half-width" over 2 seeds (seen between two CPUs: one seed moved by 0.8)
    row = "         0 55.1 ± 29.8 55.7 ± 17.4\n"
    assert texts_agree(row, "         0 55.5 ± 19.9 56.6 ± 9.9\n")
    assert not texts_agree(row, "         0 95.5 ± 19.9 56.6 ± 9.9\n")  # outside both intervals
    assert not texts_agree(row, "         0 55.1 ± 29.8 55.7 ± 17.4 1\n")


def test_a_near_chance_cell_pins_its_text_and_integers_not_its_decimals():
    """Smoke-trained accuracies at chance are noise: a cell tagged ``near-chance`` keeps its
    wording, claims and integers, and lets its decimals move."""
    ref = (
        "mlp, 2 seeds: test accuracy (%)\n        0      1000 49.2 ± 44.7 48.0 ± 34.7\n"
        "**inconclusive** - Criterion: >= 0.99. Measured 0.488 [0.00202, 0.975] (2 seeds)"
    )
    moved = ref.replace("49.2 ± 44.7", "61.0 ± 3.1").replace("0.488 [0.00202, 0.975]", "0.7 [0.6, 0.8]")
    assert texts_agree(ref, moved, near_chance=True)
    assert not texts_agree(ref, moved)  # elsewhere: pinned
    assert not texts_agree(ref, ref.replace("2 seeds", "3 seeds"), near_chance=True)
    assert not texts_agree(ref, ref.replace("1000", "800"), near_chance=True)
    assert not texts_agree(ref, ref.replace("mlp", "lenet"), near_chance=True)
    assert not texts_agree(ref, ref.replace(">=", "<="), near_chance=True)


def test_checked_cells_are_matched_in_order_not_by_their_first_line():
    """The k-th checked cell is compared with the reference's k-th: a reworded first line or an
    unchecked cell added above needs no new reference; a checked cell more or less does."""
    ref = load_reference("01_pooling")
    tagged = {"tags": ["nbval-check-output"]}

    def nb(rows, unchecked_first=False):
        cells = [{"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": []}] * unchecked_first
        cells += [
            {"cell_type": "code", "metadata": tagged, "source": f"# reworded {k}\n", "outputs": r["outputs"]}
            for k, r in enumerate(rows)
        ]
        return {"cells": cells}

    assert differences("01_pooling", nb(ref, unchecked_first=True)) == []
    assert "checked cells" in differences("01_pooling", nb(ref[:-1]))[0]
    moved = [dict(r) for r in ref]
    moved[0], moved[1] = ref[1], ref[0]
    assert differences("01_pooling", nb(moved))


def test_a_verdict_that_moves_within_its_cpu_margin_still_agrees():
    from reference_outputs import texts_agree

    ref = "**reproduced** - X. Measured 0.6 [0.55, 0.65]; the whole interval satisfies the criterion."
    near = (
        "**inconclusive** - X. Measured 0.6 [0.55, 0.65]; the interval satisfies the criterion by less "
        "than its CPU margin (0.0123, one standard error)."
    )
    band = "**reproduced** - X. Measured 0.6 [0.55, 0.65]; the whole interval lies within the paper's value +- the tolerance."
    assert texts_agree(ref, near) and texts_agree(near, band)
    assert not texts_agree(ref, ref.replace("X.", "Y."))  # the wording still counts
