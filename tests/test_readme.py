"""README.md is the front door: short, its commands are the ones CI runs, its links and layout
match the repository, and its results block is what scripts/book_summary.py prints."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ("README.md", "CONTRIBUTING.md", "benchmarks/README.md")


def _quick_start() -> dict:
    """The quick start's commands by their first word: install, build, test."""
    block = README.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    cmds = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    return {"install": cmds[0], "build": cmds[1], "test": cmds[2]}


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 150, "README.md is the front door: keep it to about 150 lines"
    for heading in (
        "## Quick start",
        "## Profiles",
        "## Your own model",
        "## Command line",
        "### NADs of any timm or torchvision model",
        "## Layout",
        "## Results on the cpu profile",
        "## Performance",
    ):
        assert f"\n{heading}\n" in README, heading


def test_ci_runs_the_readme_commands():
    cmds = _quick_start()
    assert cmds["install"] == "bash scripts/install.sh" and cmds["build"] == "python scripts/build_book.py"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for cmd in (cmds["install"], cmds["test"]):
        run = [
            re.sub(r"^timeout (-\S+ \S+ )*\d+ ", "", line.strip().split(" <", 1)[0].split(" ||", 1)[0]) for line in ci
        ]  # a time limit in front of the command is allowed
        assert cmd in run, f".ci/run must run the README's command {cmd!r} as it is written"


def test_links_resolve_and_docs_name_no_issue():
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if not target.startswith("http"):
                assert (ROOT / doc).parent.joinpath(target).exists(), f"{doc}: broken link {target}"
        assert not re.search(r"\bissue \d+|\bissues?/\d+|\s#\d+\b", text, re.I), (
            f"{doc} describes the project as it is: no issue numbers"
        )


def test_layout_lists_every_subpackage_and_the_cli_its_commands():
    layout = README.split("## Layout", 1)[1].split("```", 2)[1]
    pkgs = {p.parent.name for p in (ROOT / "nadcore").glob("*/__init__.py")}
    listed = set(re.findall(r"^  (\w+)/", layout, re.M))
    assert listed == pkgs, f"README's layout lists {sorted(listed)}; nadcore has {sorted(pkgs)}"
    from nadcore.__main__ import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        assert f"python -m nadcore {name} " in README, name


def test_results_block_is_book_summary_output(tmp_path):
    block = README.split("<!-- book_summary: begin", 1)[1].split("<!-- book_summary: end -->", 1)[0]
    block = block.split("-->", 1)[1].strip()
    assert block.startswith("| chapter | profile | execution time | claims |")
    # the script, on a scorecard JSON alone (no executed notebooks)
    card = {
        "claims": [
            {
                "id": "a",
                "chapter": "01_x",
                "verdict": "reproduced",
                "value": 1.0,
                "ci_low": 1.0,
                "ci_high": 1.0,
                "criterion": "c",
                "settings": {"profile": "cpu"},
                "kernel_path": "native",
            },
            {
                "id": "b",
                "chapter": "02_y",
                "verdict": "inconclusive",
                "value": 0.5,
                "ci_low": 0.25,
                "ci_high": 0.75,
                "criterion": "v >= 0.6",
                "budget_fraction": 0.4,
                "settings": {"profile": "cpu"},
                "kernel_path": "native",
            },
        ]
    }
    (tmp_path / "card.json").write_text(json.dumps(card))
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "book_summary.py"), "--scorecard", str(tmp_path / "card.json")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "| 02_y | cpu | - | 1 | 0 | 0 | 1 |" in out and "| **all** | | **-** | **2** |" in out
    assert "Kernel path: native." in out
    assert "- `b` (inconclusive): 0.5 [0.25, 0.75], budget 0.4" in out  # rows without a kind: paper claims
    assert "Paper claims reproduced: 1 of 2." in out and "| paper | 2 | 1 | 0 | 1 |" in out
    brief = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "book_summary.py"),
            "--brief",
            "--scorecard",
            str(tmp_path / "card.json"),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "| kind |" not in brief and "- `b`" not in brief
    assert "Of the papers' claims, inconclusive: `b` (values, intervals and criteria" in brief
