"""nadcore.book: the chapter-setup layer (profiles, knobs, provenance, claims, figure data)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest

import nadcore
from nadcore import kernels
from nadcore.book import evidence, knob_names, resolve, setup
from nadcore.book.profiles import PROFILES

STEMS = [p.stem for p in sorted((Path(__file__).parents[1] / "chapters").glob("[0-9]*.py"))]


@pytest.mark.parametrize("stem", STEMS)
def test_every_profile_resolves_and_overrides_only_known_settings(stem):
    base = resolve(stem, "paper")
    for p in PROFILES:
        cfg = resolve(stem, p)
        assert set(cfg) == set(base), f"{stem}/{p} adds or drops settings"
    assert knob_names(stem) == sorted(base)


def test_unknown_knobs_are_refused_with_suggestions(tmp_path, monkeypatch):
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path))
    with pytest.raises(ValueError, match=r"unknown knob 'fig1_evry'.*Did you mean 'fig1_every'"):
        setup("03_linear_separability", profile="smoke", knobs={"fig1_evry": 2})
    with pytest.raises(ValueError, match="JSON object"):
        setup("03_linear_separability", profile="smoke", knobs="{fig1_every: 2")
    with pytest.raises(ValueError, match="unknown profile"):
        setup("03_linear_separability", profile="laptop")
    ch = setup("03_linear_separability", profile="smoke", knobs='{"fig1_every": 2}', model="lenet")
    assert ch.cfg["fig1_every"] == 2 and ch.seeds == [0, 1]


def test_knobs_of_the_wrong_kind_or_with_misspelled_keys_fail_in_setup(tmp_path, monkeypatch):
    """A knob is checked against the kind its setting has on the profiles, into nested recipes,
    when the chapter starts: never later, inside a worker."""
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path))
    with pytest.raises(ValueError, match=r"knob 'seeds'.*must be int, got '3'"):
        setup("05_underspecification", profile="smoke", knobs={"seeds": "3"})
    with pytest.raises(
        ValueError, match=r"\['default'\]: unknown key\(s\) \['n_trian'\].*'n_train'.*Valid keys: .*epochs"
    ):
        setup("05_underspecification", profile="smoke", knobs={"concat_train": {"default": {"n_trian": 500}}})
    with pytest.raises(ValueError, match=r"knob 'networks'.*\['default'\] must be int"):
        setup("07_nad_atlas", profile="smoke", knobs={"networks": {"default": "many"}})
    with pytest.raises(ValueError, match=r"knob 'sigma'.*must be float"):
        setup("03_linear_separability", profile="smoke", knobs={"sigma": "3"})
    # a new model's recipe, an int for a float, None for an optional setting: accepted
    ch = setup(
        "05_underspecification",
        profile="smoke",
        knobs={"concat_train": {"cnn": {"n_train": 64, "epochs": 1}}, "sigma": 1, "max_train": None},
    )
    assert ch.cfg["concat_train"] == {"cnn": {"n_train": 64, "epochs": 1}} and ch.cfg["sigma"] == 1


def test_claims_figure_data_and_provenance(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path))
    ch = setup("01_pooling", profile="smoke", seed=5, device="cpu")
    assert (
        ch.claim(
            "test-claim",
            "A statement.",
            evidence.Criterion("x", ">=", 0.1),
            values=[0.5, 0.6, 0.55],
            steps=100,
            paper_steps=400,
        )
        is None
    )
    c = ch.claims[-1]
    assert c.verdict == "reproduced" and c.budget_fraction == 0.25 and c.seeds == 3
    assert c.kernel_path == kernels.path()  # which kernels made the numbers
    ch.figure_data("figX", pd.DataFrame({"a": [1, 2], "b": [0.5, 0.25]}))
    ch.finish(data="none", extra={"note": "n"})
    out = capsys.readouterr().out
    assert "Reproducibility" in out and "profile     smoke" in out.replace("  ", " ") or "smoke" in out
    assert "seeds" in out and "5, 6, 7" in out and f"nadcore {nadcore.__version__}" in out
    assert "claims" in out and "1 reproduced" in out
    saved = json.loads((tmp_path / "claims" / "01_pooling.json").read_text())
    assert [k for k in saved["claims"][0]] == list(evidence.CLAIM_KEYS)
    assert saved["claims"][0]["kernel_path"] == kernels.path()
    assert f"kernel path {kernels.path()}" in " ".join(out.split())
    table = pd.read_csv(tmp_path / "data" / "01_pooling" / "figX.csv")
    assert list(table.columns) == ["a", "b", "kernel_path"] and set(table["kernel_path"]) == {kernels.path()}


def test_only_the_setup_layer_reads_profiles():
    """Outside nadcore.book, the chapters' campaigns and their plans (which plan with chapter 3's
    settings) and the chapters' package (which registers their settings with the book) nothing
    imports the profiles, a settings module or the chapter setup: the chapters' runs, claims and
    figures take plain arguments."""
    root = Path(nadcore.__file__).parent
    for f in root.rglob("*.py"):
        if "book" in f.relative_to(root).parts or f.name in ("campaigns.py", "campaign_plans.py", "campaign.py"):
            continue
        if f.relative_to(root) == Path("chapters", "__init__.py"):  # registers the settings, reads none
            continue
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            modules = []  # what an import names, e.g. "nadcore.book.evidence.t_interval"
            if isinstance(node, ast.ImportFrom):
                modules = [f"{node.module or ''}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            bad = [
                m
                for m in modules
                if "profiles" in m
                or "settings" in m.split(".")
                or m.split(".")[:3] in (["nadcore", "book", "setup"],)
                or m in ("nadcore.book.setup",)
            ]
            assert not bad, f"{f.relative_to(root)} imports the setup layer or profiles: {bad}"


def test_registered_claims_print_their_criteria_and_carry_the_papers_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path))
    ch = setup("04_cifar10", profile="smoke", device="cpu")
    text = ch.criteria(model="lenet")
    assert max(map(len, text.splitlines())) <= 88  # as the book's code lines: no sideways scrolling
    text = " ".join(text.split())
    assert "fig7-early-carriers-hurt" in text and "NADs [0, 1]" in text and ">= 0.5" in text
    ch.claim("fig7-early-carriers-hurt", values=[0.8, 0.85, 0.9], show=False)
    c = ch.claims[-1]
    assert (c.kind, c.paper_value, c.verdict) == ("paper", 1.0, "reproduced") and c.paper_value_source
