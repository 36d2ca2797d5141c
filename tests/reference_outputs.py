"""Committed reference outputs of the chapters' checked cells (smoke profile).

``tests/reference/<stem>.json`` holds, for every code cell tagged ``nbval-check-output`` (in
order), the first line of its source and its text outputs (streams, ``text/plain`` and
``text/markdown``; never images or widget state). The nbval tests (tests/conftest.py) compare a
fresh run of each chapter against these files, so a changed result - a new default seed, a
flipped sign in the science - fails the tests. Regenerate them deliberately with

    python scripts/update_references.py [--chapters 03,04]

and commit the changed files with the change that explains them.
"""
from __future__ import annotations

import json
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
CHECK_TAG = "nbval-check-output"
_DROP = {"image/png", "image/jpeg", "image/svg+xml", "text/html",
         "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"}


def is_checked(cell) -> bool:
    return cell.get("cell_type") == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", [])


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
        if (merged and o.get("output_type") == "stream" and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == o.get("name")):
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
            rows.append({"cell": k, "source": src.splitlines()[0] if src else "",
                         "outputs": merge_streams([clean_output(o) for o in cell.get("outputs", [])])})
        k += 1
    return rows


def reference_path(stem: str) -> Path:
    return REFERENCE_DIR / f"{stem}.json"


def write_reference(stem: str, nb) -> Path:
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    path = reference_path(stem)
    path.write_text(json.dumps({"profile": "smoke", "cells": checked_outputs(nb)}, indent=1,
                               ensure_ascii=False) + "\n")
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


def differences(stem: str, nb) -> list[str]:
    """Where the checked cells of the executed ``nb`` differ from the committed reference."""
    ref = load_reference(stem)
    if ref is None:
        return [f"no committed reference for {stem}: run `python scripts/update_references.py "
                f"--chapters {stem}` and commit tests/reference/{stem}.json"]
    got = checked_outputs(nb)
    if [(r["cell"], r["source"]) for r in ref] != [(g["cell"], g["source"]) for g in got]:
        return [f"{stem}: the checked cells changed (not the same cells as the reference); "
                "regenerate the reference"]
    return [f"{stem}, Cell {g['cell']}: printed something else than the reference"
            for r, g in zip(ref, got) if texts(r["outputs"]) != texts(g["outputs"])]
