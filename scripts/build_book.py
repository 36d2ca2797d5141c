#!/usr/bin/env python
"""Build the NAD book: execute every chapter with papermill, then render it with Jupyter Book.

    python scripts/build_book.py                          # all chapters, `cpu` profile
    python scripts/build_book.py --profile smoke          # seconds per chapter (what CI runs)
    python scripts/build_book.py --chapters 02 -p model resnet18 -p seed 1
    python scripts/build_book.py --no-execute             # re-render the notebooks already executed

Data flow: chapters/<stem>.py --(jupytext, papermill)--> book/executed/<stem>.ipynb
--(jupyter-book build . -W --keep-going)--> _build/html/index.html.

* ``-p NAME VALUE`` is passed to every selected chapter whose ``parameters`` cell assigns NAME
  (VALUE is read as a Python literal when it parses as one -- ``3``, ``0.5``, ``None``, ``[1, 2]``
  -- and as a string otherwise); chapters without NAME are told so and run without it.
* Chapters run with the repository root as working directory and ``NADCORE_CACHE`` set to
  ``<repo>/.nadcache`` (unless ``--cache`` or the environment says otherwise), so they share
  cached NADs.
* A chapter is executed into ``_build/papermill/<stem>.ipynb`` and moved to ``book/executed/``
  only if every cell succeeded; on a failure the partial notebook stays in ``_build/papermill/``,
  the error names the chapter, the cell and its line in ``chapters/<stem>.py``, and the exit
  status is 1.
* ``_toc.yml`` is regenerated from ``chapters/*.py`` on every run (commit it with a new chapter).
  With ``--chapters`` the other chapters keep their notebooks from earlier runs; a chapter never
  executed yet is left out of this build's table of contents (a partial copy in ``_build/``).

The helpers below are also used by ``tests/conftest.py``.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS_DIR = ROOT / "chapters"
EXECUTED_DIR = ROOT / "book" / "executed"
PROFILES = ("smoke", "cpu", "paper")
DEFAULT_PROFILE = "cpu"
KERNEL_NAME = "python3"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ChapterError(Exception):
    """A chapter cannot be run (no parameters cell, unreadable source, ...)."""


@dataclass
class ChapterFailed(Exception):
    """A cell of a chapter raised while papermill executed it."""

    chapter: str            # e.g. "chapters/02_nads.py"
    cell_index: int         # index into the executed notebook's cells
    exec_count: int | None  # the "In [n]" number
    ename: str
    evalue: str
    source: str             # the failing cell's source
    traceback: list = field(default_factory=list)
    line: int | None = None  # first line of the cell in the .py source, when found
    partial: Path | None = None  # the partially executed notebook

    def __str__(self) -> str:
        where = f"{self.chapter}:{self.line}" if self.line else self.chapter
        head = (f"chapter {self.chapter} failed in cell In [{self.exec_count}] "
                f"({where}): {self.ename}: {self.evalue}")
        src = "\n".join("    | " + s for s in self.source.splitlines()[:15])
        tb = [_ANSI.sub("", t) for t in self.traceback]
        tb = "\n".join("\n".join(tb).splitlines()[-25:])
        out = f"{head}\n  cell source:\n{src}\n  traceback (last lines):\n{tb}"
        if self.partial:
            out += f"\n  partially executed notebook: {_rel(self.partial)}"
        return out


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Chapters and their parameters
# ---------------------------------------------------------------------------------------------
def list_chapters(chapters_dir: Path = CHAPTERS_DIR) -> list[Path]:
    """All chapter sources, sorted by name (``chapters/*.py``, files starting with _ skipped)."""
    return sorted(p for p in Path(chapters_dir).glob("*.py") if not p.name.startswith("_"))


def select_chapters(chapters: list[Path], spec: str | None) -> list[Path]:
    """``spec`` is a comma-separated list of stems or stem prefixes ("01,02_nads")."""
    if not spec:
        return list(chapters)
    chosen = []
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        token = Path(token).name
        token = token[:-3] if token.endswith(".py") else token
        hits = [c for c in chapters if c.stem == token] or [c for c in chapters if c.stem.startswith(token)]
        if len(hits) != 1:
            names = ", ".join(c.stem for c in chapters) or "(none)"
            what = "matches no chapter" if not hits else f"is ambiguous ({', '.join(h.stem for h in hits)})"
            raise ChapterError(f"--chapters: {token!r} {what}; chapters: {names}")
        if hits[0] not in chosen:
            chosen.append(hits[0])
    return sorted(chosen)


def read_chapter(path: Path):
    """The chapter as an (unexecuted) notebook node, via jupytext."""
    import jupytext

    try:
        nb = jupytext.read(str(path), fmt="py:percent")
    except Exception as exc:  # noqa: BLE001 - report any parse failure with the file name
        raise ChapterError(f"{_rel(path)}: jupytext cannot read it: {exc}") from exc
    nb.metadata.setdefault("kernelspec", {"name": KERNEL_NAME, "display_name": "Python 3",
                                          "language": "python"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    for cell in nb.cells:  # papermill expects every cell to have a tags list
        cell.metadata.setdefault("tags", [])
    return nb


def parameters_cell(nb, chapter: str = "chapter"):
    """(index, cell) of the code cell tagged ``parameters``; ChapterError if there is none."""
    hits = [(i, c) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]
    if not hits:
        raise ChapterError(f'{chapter}: no code cell tagged "parameters" '
                           '(start it with: # %% tags=["parameters"])')
    if len(hits) > 1:
        raise ChapterError(f'{chapter}: {len(hits)} cells tagged "parameters"; keep exactly one')
    return hits[0]


def parameter_defaults(nb, chapter: str = "chapter") -> dict:
    """{name: default} for every simple assignment in the parameters cell.

    A default that is not a literal is returned as the string of its source expression."""
    _, cell = parameters_cell(nb, chapter)
    try:
        tree = ast.parse(cell.source)
    except SyntaxError as exc:
        raise ChapterError(f"{chapter}: the parameters cell is not valid Python: {exc}") from exc
    out = {}
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = ast.literal_eval(value)
                except ValueError:
                    out[t.id] = ast.get_source_segment(cell.source, value)
    return out


def parse_value(text: str):
    """A command-line value: a Python literal if it parses as one, else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _cell_line(path: Path, nb, source: str) -> int | None:
    """First line (1-based) of the code cell with this source in the percent-format file."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    markers = [i for i, l in enumerate(lines) if l.startswith("# %%")]
    idx = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source == source]
    if not idx:
        return None
    offset = len(nb.cells) - len(markers)  # cells before the first marker (a header cell)
    k = idx[0] - offset
    if 0 <= k < len(markers):
        return markers[k] + 2
    first = next((s for s in source.splitlines() if s.strip()), None)
    return next((i + 1 for i, l in enumerate(lines) if first and l == first), None)


# ---------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------
@contextmanager
def chapter_environment(cache_dir: Path | str | None = None, extra: dict | None = None):
    """Environment seen by the kernels started inside this block (they inherit os.environ):
    NADCORE_CACHE, the repository root on PYTHONPATH, no interactive matplotlib backend."""
    saved = dict(os.environ)
    try:
        if cache_dir is not None:
            os.environ["NADCORE_CACHE"] = str(cache_dir)
        pp = os.environ.get("PYTHONPATH", "")
        if str(ROOT) not in pp.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([pp] if pp else []))
        for k, v in (extra or {}).items():
            os.environ[k] = str(v)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def split_parameters(path: Path, nb, parameters: dict) -> tuple[dict, list[str]]:
    """(the parameters this chapter defines, the names it does not)."""
    known = parameter_defaults(nb, _rel(path))
    used = {k: v for k, v in parameters.items() if k in known}
    return used, [k for k in parameters if k not in known]


def execute_chapter(path: Path, out_path: Path, parameters: dict, *, work_dir: Path | None = None,
                    cwd: Path = ROOT, progress_bar: bool = True, log_output: bool = False,
                    kernel_name: str = KERNEL_NAME) -> float:
    """Execute one chapter with papermill; returns the seconds it took.

    ``parameters`` must only hold names the chapter defines (see ``split_parameters``). The
    notebook is written to ``work_dir/<stem>.ipynb`` while it runs and moved to ``out_path`` when
    every cell succeeded; raises ChapterFailed (partial notebook kept) or ChapterError."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    path, out_path = Path(path), Path(out_path)
    nb = read_chapter(path)
    parameters_cell(nb, _rel(path))
    work_dir = Path(work_dir) if work_dir else out_path.parent / ".running"
    work_dir.mkdir(parents=True, exist_ok=True)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = work_dir / out_path.name
    t0 = time.perf_counter()
    try:
        papermill.execute_notebook(
            nb, str(partial), parameters=dict(parameters), kernel_name=kernel_name,
            language="python", cwd=str(cwd), progress_bar=progress_bar, log_output=log_output,
            report_mode=False)
    except PapermillExecutionError as exc:
        raise ChapterFailed(
            chapter=_rel(path), cell_index=exc.cell_index, exec_count=exc.exec_count,
            ename=exc.ename, evalue=exc.evalue, source=exc.source, traceback=list(exc.traceback),
            line=_cell_line(path, nb, exc.source), partial=partial) from None
    shutil.move(str(partial), str(out_path))
    return time.perf_counter() - t0


def executed_profile(ipynb: Path) -> str | None:
    """The profile an executed notebook was run with (from papermill's metadata)."""
    try:
        meta = json.loads(Path(ipynb).read_text())["metadata"]
        return meta.get("papermill", {}).get("parameters", {}).get("profile")
    except (OSError, ValueError, KeyError):
        return None


# ---------------------------------------------------------------------------------------------
# Table of contents and HTML
# ---------------------------------------------------------------------------------------------
TOC_HEADER = """\
# Generated by scripts/build_book.py from chapters/*.py -- do not edit by hand.
# Regenerate with: python scripts/build_book.py --toc-only   (and commit it with a new chapter)
"""


def toc_text(stems: list[str], executed_dir: str = "book/executed") -> str:
    lines = [TOC_HEADER.rstrip("\n"), "format: jb-book", "root: book/intro", "parts:"]
    if stems:
        lines += ["- caption: Chapters", "  numbered: true", "  chapters:"]
        lines += [f"  - file: {executed_dir}/{s}" for s in stems]
    lines += ["- caption: Back matter", "  chapters:", "  - file: book/references"]
    return "\n".join(lines) + "\n"


def write_toc(path: Path, stems: list[str]) -> bool:
    """Write the toc if it changed; returns True when the file was (re)written."""
    text = toc_text(stems)
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def toc_stems(path: Path) -> list[str]:
    """Chapter stems listed in a toc written by ``toc_text``."""
    return re.findall(r"file:\s*book/executed/(\S+)", Path(path).read_text())


def build_html(root: Path = ROOT, toc: Path | None = None, extra_args: tuple = ()) -> int:
    """``jupyter-book build ROOT --builder html -W --keep-going --all``; returns its exit code."""
    cmd = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
           "build", str(root), "--builder", "html", "-W", "--keep-going", "--all"]
    if toc is not None:
        cmd += ["--toc", str(toc)]
    cmd += list(extra_args)
    return subprocess.call(cmd, cwd=str(root))


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python scripts/build_book.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Executed notebooks: book/executed/. HTML: _build/html/index.html.")
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE,
                   help="execution profile passed to every chapter (default: %(default)s)")
    p.add_argument("--chapters", metavar="LIST",
                   help="comma-separated chapter stems or prefixes, e.g. 01,02 (default: all)")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                   metavar=("NAME", "VALUE"), help="papermill parameter for the chapters that define NAME")
    p.add_argument("--cache", metavar="DIR",
                   help="NAD/result cache shared by the chapters (default: $NADCORE_CACHE or .nadcache)")
    p.add_argument("--no-execute", action="store_true",
                   help="do not run chapters; render the notebooks already in book/executed/")
    p.add_argument("--no-html", action="store_true", help="execute chapters only, skip jupyter-book")
    p.add_argument("--keep-going", action="store_true",
                   help="after a failing chapter, run the remaining ones (exit status still 1)")
    p.add_argument("--log-output", action="store_true", help="stream cell outputs to the terminal")
    p.add_argument("--toc-only", action="store_true", help="regenerate _toc.yml from chapters/ and exit")
    p.add_argument("--root", type=Path, default=ROOT,
                   help="book root holding _config.yml, chapters/ and book/ (default: this repository)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = args.root.resolve()
    executed_dir = root / "book" / "executed"
    chapters = list_chapters(root / "chapters")
    all_stems = [c.stem for c in chapters]
    if write_toc(root / "_toc.yml", all_stems):
        print(f"_toc.yml updated: {len(all_stems)} chapter(s) ({', '.join(all_stems) or 'none'})")
    if args.toc_only:
        return 0
    try:
        selected = select_chapters(chapters, args.chapters)
    except ChapterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    user_params = {name: parse_value(value) for name, value in args.parameter}
    if "profile" in user_params:
        print("error: give the profile with --profile, not -p profile", file=sys.stderr)
        return 2

    failures: list[Exception] = []
    if not args.no_execute and selected:
        cache = Path(args.cache or os.environ.get("NADCORE_CACHE") or root / ".nadcache").resolve()
        print(f"Executing {len(selected)} chapter(s) on profile {args.profile!r}; NADCORE_CACHE={cache}")
        plans, unused = [], {k: [] for k in user_params}
        try:
            for path in selected:
                nb = read_chapter(path)
                used, missing = split_parameters(path, nb, user_params)
                for k in missing:
                    unused[k].append(path.stem)
                if "profile" not in parameter_defaults(nb, _rel(path)):
                    raise ChapterError(f"{_rel(path)}: the parameters cell must define `profile`")
                plans.append((path, {"profile": args.profile, **used}))
        except ChapterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for k, stems in unused.items():
            if len(stems) == len(selected):
                print(f"error: no selected chapter has a parameter {k!r} (typo?)", file=sys.stderr)
                return 2
            if stems:
                print(f"warning: -p {k}: not a parameter of {', '.join(stems)}; not passed to them")
        total = time.perf_counter()
        with chapter_environment(cache):
            for i, (path, params) in enumerate(plans, 1):
                shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
                print(f"[{i}/{len(plans)}] {path.stem}  ({shown})", flush=True)
                try:
                    secs = execute_chapter(path, executed_dir / f"{path.stem}.ipynb", params,
                                           work_dir=root / "_build" / "papermill", cwd=root,
                                           log_output=args.log_output)
                except (ChapterFailed, ChapterError) as exc:
                    print(f"\nFAILED: {exc}\n", file=sys.stderr, flush=True)
                    failures.append(exc)
                    if not args.keep_going:
                        break
                    continue
                print(f"[{i}/{len(plans)}] {path.stem}  done in {secs:.1f} s", flush=True)
        print(f"Executed {len(plans)} chapter(s) in {time.perf_counter() - total:.1f} s"
              + (f"; {len(failures)} failed" if failures else ""))
        if failures and not args.keep_going:
            print("Not building HTML because a chapter failed.", file=sys.stderr)
            return 1

    if args.no_html:
        return 1 if failures else 0
    available = [s for s in all_stems if (executed_dir / f"{s}.ipynb").exists()]
    for s in available:
        print(f"  book page {s}: profile {executed_profile(executed_dir / f'{s}.ipynb')!r}")
    toc = None
    missing = [s for s in all_stems if s not in available]
    if missing:
        print(f"  not executed yet, left out of this build: {', '.join(missing)}")
        toc = root / "_build" / "_toc.partial.yml"
        toc.parent.mkdir(parents=True, exist_ok=True)
        toc.write_text(toc_text(available))
    t0 = time.perf_counter()
    print("Building HTML: jupyter-book build . --builder html -W --keep-going", flush=True)
    rc = build_html(root, toc)
    print(f"jupyter-book finished in {time.perf_counter() - t0:.1f} s with exit status {rc}")
    if rc == 0:
        print(f"Open {_rel(root / '_build' / 'html' / 'index.html')}")
    return rc or (1 if failures else 0)


if __name__ == "__main__":
    sys.exit(main())
