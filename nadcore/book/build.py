"""Build the NAD book: execute every chapter with papermill, write the scorecard, render the HTML.

``scripts/build_book.py`` is the command line (``main``); the test suite and
``scripts/preview_scorecard.py`` use the functions below directly.

    python scripts/build_book.py                          # all chapters, `cpu` profile
    python scripts/build_book.py --profile smoke          # seconds per chapter (what CI runs)
    python scripts/build_book.py --chapters 02 -p model resnet18 -p seed 1
    python scripts/build_book.py --no-execute             # re-render what book/executed/ holds

Data flow: chapters/<stem>.py --(jupytext, papermill)--> book/executed/<stem>.ipynb, with the
chapters' claims (book/executed/claims/) and figure data (book/executed/data/) beside it
--(this script)--> book/executed/scorecard.{json,md} (+ scorecard_files/: forest plots)
--(jupyter-book build -W)--> _build/html/.

* ``-p NAME VALUE`` goes to every selected chapter whose parameters cell defines NAME (VALUE is a
  Python literal when it parses as one, else a string); a NAME no selected chapter defines is an
  error. Chapters run with the repository root as working directory, ``NADCORE_CACHE`` =
  ``.nadcache`` (unless ``--cache`` or the environment says otherwise) and ``NADBOOK_OUTPUT`` =
  ``book/executed``.
* A chapter runs into ``_build/papermill/<stem>.ipynb`` and moves to ``book/executed/`` only if
  every cell succeeded; on a failure the error names the chapter, the cell and its line in
  ``chapters/<stem>.py``, and the exit status is 1.
* ``_toc.yml`` is written by hand (a test checks it lists every chapter). A chapter never executed
  yet is left out of this build through a partial copy of it in ``_build/``.

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
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from nadcore import runtime
from nadcore.book import reference_build
from nadcore.book.evidence import read_claims
from nadcore.book.profiles import chapter_module
from nadcore.book.scorecard import write_page
from nadcore.data.cifar import missing_cifar10
from nadcore.nads.published import missing_published_nads

ROOT = Path(__file__).resolve().parents[2]  # the repository: chapters/, book/, _config.yml
PROFILES = ("smoke", "cpu", "paper")
KERNEL_NAME = "python3"
SCORECARD = "scorecard"
#: the offline web assets the pages load (``_config.yml``), installed by ``scripts/install.sh``
WEB_ASSETS = ("mathjax/tex-mml-chtml.js", "html-manager/embed-amd.js", "requirejs/require.js")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ChapterError(Exception):
    """A chapter cannot be run (no parameters cell, unreadable source, ...)."""


@dataclass
class ChapterFailed(Exception):
    """A cell of a chapter raised while papermill executed it."""

    chapter: str  # e.g. "chapters/02_nads.py"
    cell_index: int  # index into the executed notebook's cells
    exec_count: int | None  # the "In [n]" number
    ename: str
    evalue: str
    source: str  # the failing cell's source
    traceback: list = field(default_factory=list)
    line: int | None = None  # first line of the cell in the .py source, when found
    partial: Path | None = None  # the partially executed notebook

    def __str__(self) -> str:
        where = f"{self.chapter}:{self.line}" if self.line else self.chapter
        src = "\n".join("    | " + s for s in self.source.splitlines()[:15])
        tb = "\n".join("\n".join(_ANSI.sub("", t) for t in self.traceback).splitlines()[-25:])
        out = (
            f"chapter {self.chapter} failed in cell In [{self.exec_count}] ({where}): "
            f"{self.ename}: {self.evalue}\n  cell source:\n{src}\n  traceback (last lines):\n{tb}"
        )
        return out + (f"\n  partially executed notebook: {_rel(self.partial)}" if self.partial else "")


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Chapters and their parameters
# ---------------------------------------------------------------------------------------------
def list_chapters(chapters_dir: Path = ROOT / "chapters") -> list[Path]:
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
        token = Path(token).name.removesuffix(".py")
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
    nb.metadata.setdefault("kernelspec", {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    for cell in nb.cells:  # papermill expects every cell to have a tags list
        cell.metadata.setdefault("tags", [])
    return nb


def parameters_cell(nb, chapter: str = "chapter"):
    """(index, cell) of the code cell tagged ``parameters``; ChapterError if there is none."""
    hits = [
        (i, c)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])
    ]
    if not hits:
        raise ChapterError(f'{chapter}: no code cell tagged "parameters" (start it with: # %% tags=["parameters"])')
    if len(hits) > 1:
        raise ChapterError(f'{chapter}: {len(hits)} cells tagged "parameters"; keep exactly one')
    return hits[0]


def parameter_defaults(nb, chapter: str = "chapter") -> dict:
    """{name: default} of the parameters cell, as ``papermill.inspect_notebook`` reads it (a
    default that is not a literal is returned as the string of its source expression)."""
    import nbformat
    import papermill

    parameters_cell(nb, chapter)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chapter.ipynb"
        nbformat.write(nb, str(path))
        try:
            params = papermill.inspect_notebook(str(path))
        except SyntaxError as exc:
            raise ChapterError(f"{chapter}: the parameters cell is not valid Python: {exc}") from exc
    return {name: parse_value(p["default"]) for name, p in params.items()}


def parse_value(text: str):
    """A literal if ``text`` parses as one, else the string itself."""
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
    k = idx[0] - (len(nb.cells) - len(markers))  # cells before the first marker (a header cell)
    if 0 <= k < len(markers):
        return markers[k] + 2
    first = next((s for s in source.splitlines() if s.strip()), None)
    return next((i + 1 for i, l in enumerate(lines) if first and l == first), None)


# ---------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------
@contextmanager
def chapter_environment(cache_dir: Path | str | None = None, output_dir: Path | str | None = None):
    """Environment of the kernels started inside this block (they inherit os.environ):
    NADCORE_CACHE, NADBOOK_OUTPUT (claims and figure data) and the repository on PYTHONPATH."""
    saved = dict(os.environ)
    try:
        if cache_dir is not None:
            os.environ["NADCORE_CACHE"] = str(cache_dir)
        if output_dir is not None:
            os.environ["NADBOOK_OUTPUT"] = str(output_dir)
        pp = os.environ.get("PYTHONPATH", "")
        if str(ROOT) not in pp.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([pp] if pp else []))
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def split_parameters(path: Path, nb, parameters: dict) -> tuple[dict, list[str]]:
    """(the parameters this chapter defines, the names it does not)."""
    known = parameter_defaults(nb, _rel(path))
    return {k: v for k, v in parameters.items() if k in known}, [k for k in parameters if k not in known]


def execute_chapter(
    path: Path,
    out_path: Path,
    parameters: dict,
    *,
    work_dir: Path | None = None,
    cwd: Path = ROOT,
    progress_bar: bool = True,
    log_output: bool = False,
) -> float:
    """Execute one chapter with papermill; returns the seconds it took.

    The notebook is written to ``work_dir/<stem>.ipynb`` while it runs and moved to ``out_path``
    when every cell succeeded; raises ChapterFailed (partial notebook kept) or ChapterError."""
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
            nb,
            str(partial),
            parameters=dict(parameters),
            kernel_name=KERNEL_NAME,
            language="python",
            cwd=str(cwd),
            progress_bar=progress_bar,
            log_output=log_output,
        )
    except PapermillExecutionError as exc:
        raise ChapterFailed(
            chapter=_rel(path),
            cell_index=exc.cell_index,
            exec_count=exc.exec_count,
            ename=exc.ename,
            evalue=exc.evalue,
            source=exc.source,
            traceback=list(exc.traceback),
            line=_cell_line(path, nb, exc.source),
            partial=partial,
        ) from None
    shutil.move(str(partial), str(out_path))
    return time.perf_counter() - t0


def executed_profile(ipynb: Path) -> str | None:
    """The profile an executed notebook was run with (from papermill's metadata)."""
    try:
        return json.loads(Path(ipynb).read_text())["metadata"]["papermill"]["parameters"].get("profile")
    except (OSError, ValueError, KeyError):
        return None


# ---------------------------------------------------------------------------------------------
# Scorecard, table of contents and HTML
# ---------------------------------------------------------------------------------------------
def write_scorecard(executed: Path, stems: list[str], coverage=None) -> dict:
    """Merge the executed chapters' claims into ``scorecard.json`` and write the Scorecard page
    ``scorecard.md`` with its forest plots (:mod:`nadcore.book.scorecard`): verdict badges and
    counts first, one line per claim linking to the section that states its verdict. The JSON
    also says what made it (``"build"``: the commit, whether the tree had uncommitted changes,
    the CPU, the time), for :file:`scripts/compare_builds.py`.
    ``coverage``: (have, missing) lines on the papers' networks, or a function of the build's
    profile that gives them (``scripts/build_book.py`` passes
    :func:`nadcore.chapters.campaigns.coverage_lines`); None: no such section."""

    files = [executed / "claims" / f"{s}.json" for s in stems if (executed / "claims" / f"{s}.json").exists()]
    card = read_claims(files)
    ids = [c["id"] for c in card["claims"]]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ChapterError(f"claim ids must be unique across chapters; repeated: {dup}")
    root = Path(__file__).resolve().parents[2]
    card["build"] = {
        **runtime.commit_info(root),
        "cpu": runtime.cpu_model(),
        "kernels": kernel_isa(),
        "written": runtime.utc_now(),
        "reference": reference_build.anchoring(card["claims"]),
    }
    (executed / "scorecard.json").write_text(json.dumps(card, indent=1))
    profile = executed_profile(executed / (stems[0] + ".ipynb")) if stems else None
    if callable(coverage):  # the campaigns' coverage of the papers' networks, for this profile
        coverage = coverage(profile if profile in PROFILES else "cpu")
    write_page(card, executed, SCORECARD, profile=profile, coverage=coverage)
    return card


#: the environment that holds PyTorch, oneDNN and MKL to AVX2, the instruction set every x86 CPU the
#: book meets has (the kernel path that ``scripts/cpu_rounding.py`` and
#: ``benchmarks/bench_kernel_paths.py`` compare with this CPU's default one)
AVX2_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
#: the environment variables that hold those libraries to an instruction set below the CPU's
ISA_VARIABLES = tuple(AVX2_KERNELS)


def kernel_isa() -> str:
    """The instruction set of the build's PyTorch kernels (``"torch AVX512"``), and the variables of
    :data:`ISA_VARIABLES` that held its libraries below the CPU's (two builds on one CPU round
    alike only if these agree)."""
    import torch

    held = [f"{v}={os.environ[v]}" for v in ISA_VARIABLES if os.environ.get(v)]
    return ", ".join([f"torch {torch.backends.cpu.get_cpu_capability()}"] + held)


def toc_text(stems: list[str]) -> str:
    """The table of contents for these executed chapters (the committed _toc.yml lists all)."""
    lines = ["format: jb-book", "root: book/intro", "parts:"]
    if stems:
        lines += ["- caption: Chapters", "  numbered: true", "  chapters:"]
        lines += [f"  - file: book/executed/{s}" for s in stems]
    lines += [
        "- caption: Back matter",
        "  chapters:",
        f"  - file: book/executed/{SCORECARD}",
        "  - file: book/references",
    ]
    return "\n".join(lines) + "\n"


def toc_stems(path: Path) -> list[str]:
    """Chapter stems listed in a toc (the scorecard page excluded)."""
    return [s for s in re.findall(r"file:\s*book/executed/(\S+)", Path(path).read_text()) if s != SCORECARD]


def build_html(root: Path = ROOT, toc: Path | None = None) -> int:
    """``jupyter-book build ROOT --builder html -W --keep-going --all``; returns its exit code."""
    cmd = [
        sys.executable,
        "-c",
        "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
        "build",
        str(root),
        "--builder",
        "html",
        "-W",
        "--keep-going",
        "--all",
    ]
    return subprocess.call(cmd + (["--toc", str(toc)] if toc else []), cwd=str(root))


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def missing_web_assets(root: Path = ROOT) -> list[str]:
    """The web assets of :data:`WEB_ASSETS` that ``root/book/static/vendor/`` lacks: without them
    the pages render with raw TeX and no widgets."""
    vendor = root / "book" / "static" / "vendor"
    return [a for a in WEB_ASSETS if not (vendor / a).is_file()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python scripts/build_book.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default="cpu",
        help="execution profile passed to every chapter (default: %(default)s)",
    )
    p.add_argument("--chapters", metavar="LIST", help="comma-separated stems or prefixes, e.g. 01,02")
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="papermill parameter for the chapters that define NAME",
    )
    p.add_argument("--cache", metavar="DIR", help="result cache (default: $NADCORE_CACHE or .nadcache)")
    p.add_argument("--no-execute", action="store_true", help="render what book/executed/ holds")
    p.add_argument("--no-html", action="store_true", help="execute chapters only, skip jupyter-book")
    p.add_argument("--keep-going", action="store_true", help="after a failing chapter, run the others")
    p.add_argument("--log-output", action="store_true", help="stream cell outputs to the terminal")
    p.add_argument("--root", type=Path, default=ROOT, help="book root (default: this repository)")
    return p


def _plan(selected, user_params, profile):
    plans, unused = [], {k: [] for k in user_params}
    for path in selected:
        nb = read_chapter(path)
        used, missing = split_parameters(path, nb, user_params)
        if "profile" not in parameter_defaults(nb, _rel(path)):
            raise ChapterError(f"{_rel(path)}: the parameters cell must define `profile`")
        for k in missing:
            unused[k].append(path.stem)
        plans.append((path, {"profile": profile, **used}))
    for k, stems in unused.items():
        if len(stems) == len(selected):
            raise ChapterError(f"no selected chapter has a parameter {k!r} (typo?)")
        if stems:
            print(f"warning: -p {k}: not a parameter of {', '.join(stems)}; not passed to them")
    return plans


#: what each kind of data a chapter declares (its settings' ``DATA``) is, and how it is checked
_DATA_CHECKS = {
    "published NADs": lambda: _nads_problem(*missing_published_nads()),
    "CIFAR-10": lambda: missing_cifar10()[1],
}


def _nads_problem(root, lacking) -> str | None:
    if not lacking:
        return None
    where = (
        f"in {root}" if root else "anywhere (NADCORE_PUBLISHED_NADS, ../shared/reference/lts4-nads, ~/.cache/nadcore)"
    )
    return f"the authors' published NADs {', '.join(lacking)} are missing or damaged {where}"


def missing_data(stems) -> list[str]:
    """What the chapters ``stems`` need (their settings' ``DATA``) and is not found intact, one
    sentence each; a chapter that declares nothing needs nothing."""
    needs = []
    for stem in stems:
        try:
            needs += list(getattr(chapter_module(stem, "settings"), "DATA", ()))
        except ModuleNotFoundError:
            continue
    return [p for kind in dict.fromkeys(needs) if (p := _DATA_CHECKS[kind]()) is not None]


def main(argv: list[str] | None = None, coverage=None) -> int:
    """The command line of ``scripts/build_book.py``; ``coverage``: as :func:`write_scorecard`'s."""
    args = _parser().parse_args(argv)
    root = args.root.resolve()
    executed = root / "book" / "executed"
    chapters = list_chapters(root / "chapters")
    user_params = {name: parse_value(value) for name, value in args.parameter}
    try:
        if "profile" in user_params:
            raise ChapterError("give the profile with --profile, not -p profile")
        selected = select_chapters(chapters, args.chapters)
        plans = _plan(selected, user_params, args.profile) if not args.no_execute else []
        lacking = missing_data([p.stem for p, _ in plans])
        if lacking:  # before the first chapter, not after some minutes of it
            raise ChapterError(
                "data the chapters need is missing:\n  " + "\n  ".join(lacking) + "\nrun `python "
                "scripts/fetch_data.py` where there is internet (scripts/install.sh does), or point "
                "NADCORE_PUBLISHED_NADS / NADCORE_CIFAR_SUBSET at a copy"
            )
        missing = [] if args.no_html else missing_web_assets(root)
        if missing:  # found now, not after the chapters' half hour
            raise ChapterError(
                f"book/static/vendor/ lacks the pages' web assets ({', '.join(missing)}): "
                "run `bash scripts/install.sh` first, or pass --no-html to execute the "
                "chapters without rendering them"
            )
    except ChapterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failures = []
    if plans:
        cache = Path(args.cache or os.environ.get("NADCORE_CACHE") or root / ".nadcache").resolve()
        print(f"Executing {len(plans)} chapter(s) on profile {args.profile!r}; NADCORE_CACHE={cache}")
        total = time.perf_counter()
        with chapter_environment(cache, executed):
            for i, (path, params) in enumerate(plans, 1):
                print(
                    f"[{i}/{len(plans)}] {path.stem}  ({', '.join(f'{k}={v!r}' for k, v in params.items())})",
                    flush=True,
                )
                try:
                    secs = execute_chapter(
                        path,
                        executed / f"{path.stem}.ipynb",
                        params,
                        work_dir=root / "_build" / "papermill",
                        cwd=root,
                        log_output=args.log_output,
                    )
                except (ChapterFailed, ChapterError) as exc:
                    print(f"\nFAILED: {exc}\n", file=sys.stderr, flush=True)
                    failures.append(exc)
                    if not args.keep_going:
                        break
                    continue
                print(f"[{i}/{len(plans)}] {path.stem}  done in {secs:.1f} s", flush=True)
        print(
            f"Executed {len(plans)} chapter(s) in {time.perf_counter() - total:.1f} s"
            + (f"; {len(failures)} failed" if failures else "")
        )
        if failures and not args.keep_going:
            print("Not building HTML because a chapter failed.", file=sys.stderr)
            return 1
    available = [c.stem for c in chapters if (executed / f"{c.stem}.ipynb").exists()]
    executed.mkdir(parents=True, exist_ok=True)
    card = write_scorecard(executed, available, coverage)
    print(f"Scorecard: {len(card['claims'])} claims -> {_rel(executed / 'scorecard.json')}")
    if args.no_html:
        return 1 if failures else 0
    for s in available:
        print(f"  book page {s}: profile {executed_profile(executed / f'{s}.ipynb')!r}")
    toc = None
    if len(available) < len(chapters):
        print(f"  not executed yet, left out: {', '.join(c.stem for c in chapters if c.stem not in available)}")
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
