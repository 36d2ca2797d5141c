"""Tests of the book pipeline itself (scripts/build_book.py), on throwaway chapters in tmp_path."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import _load_build_book

bb = _load_build_book()
ROOT = Path(__file__).resolve().parents[1]

CHAPTER = textwrap.dedent("""\
    # %% [markdown]
    # # Throwaway

    # %% tags=["parameters"]
    profile = "cpu"
    seed = 0
    device = "auto"
    model = "lenet"
    knob = None

    # %%
    print(f"profile={profile} model={model} knob={knob!r}")

    # %%
    def boom(x):
        return x / 0

    boom(seed)
    """)


@pytest.fixture
def book(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_demo.py").write_text(CHAPTER)
    (tmp_path / "chapters" / "02_other.py").write_text(CHAPTER.replace('model = "lenet"\n', ""))
    return tmp_path


def test_select_chapters(book):
    chapters = bb.list_chapters(book / "chapters")
    assert [c.stem for c in bb.select_chapters(chapters, None)] == ["01_demo", "02_other"]
    assert [c.stem for c in bb.select_chapters(chapters, "02,01_demo")] == ["01_demo", "02_other"]
    assert [c.stem for c in bb.select_chapters(chapters, "chapters/02_other.py")] == ["02_other"]
    with pytest.raises(bb.ChapterError, match="matches no chapter"):
        bb.select_chapters(chapters, "07")
    with pytest.raises(bb.ChapterError, match="ambiguous"):
        bb.select_chapters(chapters, "0")


def test_parameters_and_values(book):
    nb = bb.read_chapter(book / "chapters" / "01_demo.py")
    assert bb.parameter_defaults(nb) == {"profile": "cpu", "seed": 0, "device": "auto", "model": "lenet", "knob": None}
    assert bb.parse_value("3") == 3 and bb.parse_value("0.5") == 0.5
    assert bb.parse_value("None") is None and bb.parse_value("[1, 2]") == [1, 2]
    assert bb.parse_value("resnet18") == "resnet18"
    assert bb.parse_value("mypkg.nets:MyNet") == "mypkg.nets:MyNet"
    used, missing = bb.split_parameters(
        book / "chapters" / "02_other.py", bb.read_chapter(book / "chapters" / "02_other.py"), {"model": "x", "knob": 1}
    )
    assert used == {"knob": 1} and missing == ["model"]


def test_partial_toc_round_trip(tmp_path):
    (tmp_path / "_toc.yml").write_text(bb.toc_text(["01_a", "02_b"]))
    assert bb.toc_stems(tmp_path / "_toc.yml") == ["01_a", "02_b"]
    assert f"book/executed/{bb.SCORECARD}" in bb.toc_text([]) and "chapters:" in bb.toc_text([])


def test_scorecard_page_links_every_claim_and_refuses_duplicates(tmp_path):
    import json

    from nadcore.book.evidence import Claim, Criterion, exact_value, write_claims

    c = Claim.evaluate("a-claim", "01_demo", "Fig. 9: a | b.", Criterion("x", ">=", 0), exact_value(1.0), trained=False)
    write_claims(tmp_path / "claims" / "01_demo.json", "01_demo", [c])
    card = bb.write_scorecard(tmp_path, ["01_demo", "02_never_run"])
    assert [x["id"] for x in card["claims"]] == ["a-claim"]
    assert json.loads((tmp_path / "scorecard.json").read_text()) == card
    page = (tmp_path / "scorecard.md").read_text()
    assert "{ref}`a-claim <claim-a-claim>`" in page and "Fig. 9: a | b." in page
    assert 'data-verdict="reproduced"' in page and "Paper claims reproduced: 1 of 1" in page
    assert (tmp_path / "scorecard_files" / "forest-01_demo.png").exists()
    write_claims(tmp_path / "claims" / "02_never_run.json", "02_never_run", [c])
    with pytest.raises(bb.ChapterError, match="unique"):
        bb.write_scorecard(tmp_path, ["01_demo", "02_never_run"])


def test_a_scorecard_names_its_build_and_two_builds_compare_claim_by_claim(tmp_path, capsys, monkeypatch):
    import importlib.util

    from nadcore import runtime
    from nadcore.book.evidence import Claim, Criterion, t_interval, write_claims

    spec = importlib.util.spec_from_file_location("compare_builds", ROOT / "scripts" / "compare_builds.py")
    cb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cb)

    def build(folder, values, run="k1"):
        crit = Criterion("x", ">=", 0.5)
        claims = [
            Claim.evaluate(i, "01_demo", "a.", crit, t_interval(v), trained=True, run=run) for i, v in values.items()
        ]
        write_claims(folder / "claims" / "01_demo.json", "01_demo", claims)
        return bb.write_scorecard(folder, ["01_demo"])

    a = build(tmp_path / "a", {"one": [0.8, 0.81, 0.82], "two": [0.7, 0.72, 0.74]})
    assert a["build"]["cpu"] == runtime.cpu_model() and set(a["build"]) >= {"commit", "dirty", "written"}
    assert a["build"]["kernels"].startswith("torch ")  # the instruction set that rounded its runs
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", "AVX2")
    assert bb.kernel_isa().endswith(", DNNL_MAX_CPU_ISA=AVX2")
    monkeypatch.delenv("DNNL_MAX_CPU_ISA")
    build(tmp_path / "b", {"one": [0.8, 0.81, 0.82], "two": [0.5, 0.7, 0.74], "three": [0.9, 0.9, 0.9]})
    record = tmp_path / "a.json"
    card_a = json.loads((tmp_path / "a" / "scorecard.json").read_text())
    card_a["build"]["dirty"] = False
    (tmp_path / "a" / "scorecard.json").write_text(json.dumps(card_a))
    assert cb.main(["--record", str(tmp_path / "a" / "scorecard.json"), "--out", str(record)]) == 0
    assert json.loads(record.read_text())["claims"]["one"]["verdict"] == "reproduced"
    capsys.readouterr()
    assert cb.main([str(record), str(tmp_path / "b" / "scorecard.json")]) == 1  # "two" changed verdict
    out = capsys.readouterr().out
    assert "2 claims in both builds; 1 changed verdict" in out and "two (paper): reproduced" in out
    assert "only in B: three" in out and "values: 1 of 2 identical" in out
    assert "interval edges that moved (1)" in out and "(two)" in out
    assert "runs differ" not in out  # the same code and parameters: only the machine differs
    build(tmp_path / "c", {"one": [0.8, 0.81, 0.82]}, run="k2")
    cb.main([str(record), str(tmp_path / "c" / "scorecard.json")])
    assert "claims whose runs differ (other code or parameters, not only another CPU): 1" in capsys.readouterr().out
    assert cb.edge_move({"ci_low": 0.4, "ci_high": 0.6}, {"ci_low": 0.45, "ci_high": 0.5}) == pytest.approx(1.0)
    assert cb.main([str(record), str(record)]) == 0
    card_a["build"]["dirty"] = True
    (tmp_path / "a" / "scorecard.json").write_text(json.dumps(card_a))
    with pytest.raises(SystemExit, match="uncommitted"):
        cb.main(["--record", str(tmp_path / "a" / "scorecard.json"), "--out", str(record)])


def test_cli_usage_errors(book, capsys):
    assert bb.main(["--root", str(book), "--chapters", "09", "--no-html"]) == 2
    assert "matches no chapter" in capsys.readouterr().err
    assert bb.main(["--root", str(book), "-p", "modle", "x", "--no-html"]) == 2
    assert "no selected chapter has a parameter 'modle'" in capsys.readouterr().err
    # a checkout without `bash scripts/install.sh` would render pages without MathJax: refused
    # before any chapter runs, not after them
    assert bb.main(["--root", str(book)]) == 2
    err = capsys.readouterr().err
    assert "run `bash scripts/install.sh` first" in err and "mathjax/tex-mml-chtml.js" in err
    assert not (book / "book" / "executed").exists()


def test_failing_cell_names_chapter_cell_and_line(book, tmp_path):
    chapter = book / "chapters" / "01_demo.py"
    out = tmp_path / "out" / "01_demo.ipynb"
    with bb.chapter_environment(tmp_path / "cache"):
        with pytest.raises(bb.ChapterFailed) as info:
            bb.execute_chapter(
                chapter,
                out,
                {"profile": "smoke", "knob": 7},
                work_dir=tmp_path / "running",
                cwd=book,
                progress_bar=False,
            )
    err = info.value
    assert err.ename == "ZeroDivisionError"
    assert err.line == CHAPTER.splitlines().index("def boom(x):") + 1
    text = str(err)
    assert "01_demo.py" in text and "ZeroDivisionError" in text and "boom(seed)" in text
    assert not out.exists(), "a failed chapter must not land in the executed folder"
    partial = json.loads(err.partial.read_text())
    printed = "".join("".join(o.get("text", "")) for c in partial["cells"] for o in c.get("outputs", []))
    assert "profile=smoke model=lenet knob=7" in printed
