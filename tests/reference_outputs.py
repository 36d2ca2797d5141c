"""Committed reference outputs of the chapters' checked cells (smoke profile).

``tests/reference/<stem>.json`` holds, for every code cell tagged ``nbval-check-output`` (in
order), its text outputs (streams, ``text/plain`` and ``text/markdown``; never images or widget
state), with the cell's number and first line for a reader. The nbval tests (tests/conftest.py)
compare a fresh run of each chapter against these files, the k-th checked cell against the k-th
reference, so a changed result - a new default seed, a flipped sign in the science - fails the
tests, while a reworded first line or an unchecked cell added above needs no new reference.
Regenerate them deliberately with

    python scripts/update_references.py [--chapters 03,04]

and commit the changed files with the change that explains them.

Texts are compared by :func:`texts_agree`: text and integers must match exactly, numbers with a
decimal point or an exponent within ``ATOL + RTOL * max(|a|, |b|)``, plus half the wider
interval's width for a claim's measured value and interval, and for both numbers of a table's
"mean ± half-width" (an interval says by how much its value is uncertain; with two seeds on the
smoke profile, two near-chance accuracies can even coincide and give an interval of width 0, so
the reference's width counts as well). Trained results differ a little between CPUs (their BLAS
and the native kernels take other code paths, and SGD amplifies the rounding: on the smoke
profile accuracies moved by up to 0.004 and a t-interval's ends by 0.014 between two machines,
and a two-seed mean ± half-width of an MLP's accuracy from 55.1 ± 29.8 to 55.5 ± 19.9),
so exact text would fail on a machine that is merely different.
A claim's verdict and its reason may differ as well, because they are computed from numbers that
are within the tolerance (a smoke-profile interval can straddle its threshold on one machine and
not on another); spacing is ignored, since column widths follow the numbers.

Cells also tagged ``near-chance`` print networks trained on the smoke profile's few samples and
epochs, whose accuracies sit at chance: their decimals are noise (any change of rounding - a
kernel, a BLAS, another CPU - moves them, and so does nothing that a test could name). There the
reference pins the text, the integers and the claims' wording, never a decimal. What makes a
changed seed or a changed science fail is the exact and far-from-noise values of the other
checked cells: closed forms, Monte Carlo draws, NAD estimates (averages over random networks, no
SGD), data draws and the committed bundles. Every chapter with trained cells has such a cell
(tests/test_references.py checks that a changed seed still fails chapters 1 and 5).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
CHECK_TAG = "nbval-check-output"
NEAR_CHANCE_TAG = "near-chance"
_DROP = {
    "image/png",
    "image/jpeg",
    "image/svg+xml",
    "text/html",
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
}


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def is_checked(cell) -> bool:
    return cell.get("cell_type") == "code" and CHECK_TAG in _tags(cell)


def is_near_chance(cell) -> bool:
    """A checked cell whose decimals are trained near chance (see the module docstring)."""
    return is_checked(cell) and NEAR_CHANCE_TAG in _tags(cell)


def _joined(v):
    return "".join(v) if isinstance(v, list) else v


def clean_output(out: dict) -> dict:
    """An output with only what nbval compares (text, as one string), without counters and
    metadata."""
    out = {k: v for k, v in dict(out).items() if k not in ("execution_count", "metadata")}
    if "text" in out:
        out["text"] = _joined(out["text"])
    if "data" in out:
        out["data"] = {k: _joined(v) for k, v in dict(out["data"]).items() if k not in _DROP}
    if out.get("output_type") in ("display_data", "execute_result"):
        out["metadata"] = {}
    if out.get("output_type") == "execute_result":
        out["execution_count"] = None
    return out


def merge_streams(outputs: list[dict]) -> list[dict]:
    """Consecutive outputs of the same stream merged into one (a kernel splits a cell's prints
    into chunks depending on timing; nbval merges them the same way before comparing)."""
    merged = []
    for o in outputs:
        if (
            merged
            and o.get("output_type") == "stream"
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == o.get("name")
        ):
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + o["text"]}
        else:
            merged.append(o)
    return merged


def checked_outputs(nb) -> list[dict]:
    """``[{"cell": k, "source": first line, "outputs": [...]}]`` for the checked cells of an
    executed notebook (``k`` counts code cells from 0, as nbval's ``Cell k``)."""
    rows, k = [], 0
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        if is_checked(cell):
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            rows.append(
                {
                    "cell": k,
                    "source": src.splitlines()[0] if src else "",
                    "near_chance": is_near_chance(cell),
                    "outputs": merge_streams([clean_output(o) for o in cell.get("outputs", [])]),
                }
            )
        k += 1
    return rows


def reference_path(stem: str) -> Path:
    return REFERENCE_DIR / f"{stem}.json"


def write_reference(stem: str, nb) -> Path:
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    path = reference_path(stem)
    path.write_text(json.dumps({"profile": "smoke", "cells": checked_outputs(nb)}, indent=1, ensure_ascii=False) + "\n")
    return path


def load_reference(stem: str) -> list[dict] | None:
    path = reference_path(stem)
    return json.loads(path.read_text())["cells"] if path.exists() else None


def texts(outputs) -> list[str]:
    """The text of outputs, for a readable comparison in messages and tests."""
    out = []
    for o in merge_streams([clean_output(o) for o in outputs]):
        if "text" in o:
            out.append(o["text"])
        out += [o["data"][k] for k in ("text/markdown", "text/plain") if k in o.get("data", {})]
    return out


ATOL, RTOL = 0.02, 0.05
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?!\w|\.\d)")
_MARGIN = r"(?: by less than its CPU margin \(#, (?:one standard error|# standard errors: runs of this build)\))?"  # numbers are "#" by then
#: a reason's CPU margin: it comes and goes with the verdict, so it is left out, number and all
_MARGIN_TEXT = re.compile(r" by less than its CPU margin \([^)]*\)")
_VERDICT = re.compile(
    r"\*\*(?:reproduced|not reproduced|inconclusive)\*\*|"
    r"(?:the value|the whole interval) (?:satisfies|violates) the criterion|"
    r"the interval (?:satisfies|violates) the criterion" + _MARGIN + "|"
    r"(?:the value|the whole interval) lies (?:within|outside) the paper's value \+- the tolerance|"
    r"the interval (?:clears|overlaps) the edge of the tolerance band" + _MARGIN + "|"
    r"the interval straddles the threshold"
)


_MEASURED = re.compile(r"Measured ([^\s\[]+) \[([^,\]]+), ([^\]]+)\]")  # a claim's value [low, high]
_PLUS_MINUS = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)) ± (\d+\.?\d*|\.\d+)")  # a mean ± half-width


def _numbers(text: str) -> list[tuple[str, float]]:
    """The numbers of ``text``, each with its extra tolerance: half the width of the interval
    for a claim's "Measured value [low, high]" and for both numbers of a table's "mean ± half"
    (with 2 seeds, a t-interval multiplies a small change of one seed's result by 12.7, so its
    half-width is as uncertain as itself), else 0."""
    extra = {}
    for m in _MEASURED.finditer(text):
        try:
            half = abs(float(m.group(3)) - float(m.group(2))) / 2
        except ValueError:
            continue
        extra.update({m.start(g): half for g in (1, 2, 3)})
    for m in _PLUS_MINUS.finditer(text):
        extra.update({m.start(g): float(m.group(2)) for g in (1, 2)})
    return [(n.group(), extra.get(n.start(), 0.0)) for n in _NUMBER.finditer(text)]


def _numbers_agree(a: tuple[str, float], b: tuple[str, float], near_chance: bool = False) -> bool:
    if a[0] == b[0]:
        return True
    if not any(c in a[0] + b[0] for c in ".eE"):
        return False  # integers: exactly
    if near_chance:
        return True  # a decimal trained near chance: noise
    x, y = float(a[0]), float(b[0])
    return abs(x - y) <= ATOL + RTOL * max(abs(x), abs(y)) + max(a[1], b[1])


def texts_agree(ref: str, got: str, near_chance: bool = False) -> bool:
    """Whether ``got`` says what ``ref`` says, up to the tolerances of the module docstring
    (``near_chance``: of a cell tagged so, whose decimals are not compared)."""
    if ref == got:
        return True
    ref, got = _MARGIN_TEXT.sub("", ref), _MARGIN_TEXT.sub("", got)
    skeleton = [" ".join(_VERDICT.sub("VERDICT", _NUMBER.sub("#", t)).split()) for t in (ref, got)]
    nums = [_numbers(t) for t in (ref, got)]
    return (
        skeleton[0] == skeleton[1]
        and len(nums[0]) == len(nums[1])
        and all(_numbers_agree(a, b, near_chance) for a, b in zip(*nums))
    )


def outputs_agree(ref_outputs, got_outputs, near_chance: bool = False) -> bool:
    """:func:`texts_agree` for every text of two cells' outputs (see :func:`texts`)."""
    ref, got = texts(ref_outputs), texts(got_outputs)
    return len(ref) == len(got) and all(texts_agree(r, g, near_chance) for r, g in zip(ref, got))


def differences(stem: str, nb) -> list[str]:
    """Where the checked cells of the executed ``nb`` differ from the committed reference."""
    ref = load_reference(stem)
    if ref is None:
        return [
            f"no committed reference for {stem}: run `python scripts/update_references.py "
            f"--chapters {stem}` and commit tests/reference/{stem}.json"
        ]
    got = checked_outputs(nb)
    if len(ref) != len(got):
        return [f"{stem}: {len(got)} checked cells, the reference has {len(ref)}; regenerate the reference"]
    return [
        f"{stem}, Cell {g['cell']}: printed something else than the reference"
        for r, g in zip(ref, got)
        if not outputs_agree(r["outputs"], g["outputs"], g["near_chance"])
    ]
