"""Notebook tests: every chapters/*.py, executed on the `smoke` profile, checked with nbval.

How it works (no flags needed; plain `pytest` runs it):

1. Collection. Next to the Python module tests/test_notebooks.py, ``pytest_collect_file`` adds one
   collector that yields a ``ChapterNotebook`` per chapters/*.py (so new chapters are picked up
   automatically). A ChapterNotebook converts its chapter with jupytext, injects
   ``profile="smoke"`` with papermill's ``parameterize_notebook`` (the same "injected-parameters"
   cell papermill adds) and yields one nbval item per code cell: ``chapters/02_nads.py::Cell 4``.
   Collection runs nothing.
2. Papermill run. Before the first cell of a chapter runs, the chapter is executed once with
   papermill (scripts/build_book.py's ``execute_chapter``) on the smoke profile, with
   NADCORE_CACHE pointing to a fresh per-session directory and NADBOOK_OUTPUT to the folder of
   the executed notebooks (claims and figure data land beside them). The executed notebooks are
   reused by tests/test_book_build.py and tests/test_browser.py (rendered, not run again) and by
   tests/test_chapter_facts.py (robust facts read from the claims and figure data).
3. nbval. nbval then re-executes the parameterised notebook cell by cell in a new kernel (working
   directory: the repository root, NADCORE_CACHE: the papermill run's cache, so its jobs are read
   back, not trained a second time; the papermill run's own outputs, computed from scratch, are
   compared with the same references by tests/test_chapter_facts.py) in *lax* mode: every cell must run without error, and cells
   tagged ``nbval-check-output`` must print what the COMMITTED reference says (exactly, but for
   trained numbers, which may differ a little between CPUs, and for the decimals of cells also
   tagged ``near-chance``: tests/reference_outputs.py)
   (tests/reference/<stem>.json; regenerate it deliberately with
   ``python scripts/update_references.py``). A changed default seed or a flipped sign in the
   science therefore fails here.

If the reference run fails, the failing cell's item fails with the chapter, cell, line in the .py
file and traceback; the chapter's other cells are skipped (not run twice).

Knobs (environment variables):
  NADBOOK_TEST_ARTIFACTS=DIR   keep executed notebooks, caches and the test-built HTML in DIR
                               (default: pytest's temporary directory, last 3 runs kept)
  NADBOOK_NBVAL_CACHE=fresh    let the nbval re-run compute everything again in a cache of its own
                               (by default it reads the reference run's: the tagged outputs then
                               check cache round-trips, and the papermill run's the computation)
  NADBOOK_ROOT=DIR             test another book root's chapters/ (used to test the pipeline itself)
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from reference_outputs import is_checked, is_near_chance, load_reference, outputs_agree

import nadcore.chapters  # noqa: F401  (registers every chapter's settings and claims with the book)

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent
ANCHOR = TESTS_DIR / "test_notebooks.py"
SMOKE = {"profile": "smoke"}


def _load_build_book():
    """The book build (nadcore.book.build, which scripts/build_book.py runs)."""
    from nadcore.book import build

    return build


def book_root() -> Path:
    return Path(os.environ.get("NADBOOK_ROOT") or REPO).resolve()


def chapter_sources() -> list[Path]:
    return _load_build_book().list_chapters(book_root() / "chapters")


@dataclass
class Reference:
    """Outcome of the papermill reference run of one chapter on the smoke profile."""

    chapter: Path
    notebook: Path | None  # executed notebook (None if it failed)
    error: Exception | None  # ChapterFailed / ChapterError
    seconds: float


class SmokeRuns:
    """Per-session papermill runs of the chapters (memoised), shared by nbval and the build test."""

    def __init__(self, config):
        self.bb = _load_build_book()
        env_dir = os.environ.get("NADBOOK_TEST_ARTIFACTS")
        if env_dir:
            # one folder per pytest-xdist worker: every worker collects (and so creates this
            # object), but only the one given the "smoke" group runs the chapters
            base = (Path(env_dir) / os.environ.get("PYTEST_XDIST_WORKER", "")).resolve()
            for sub in ("executed", "running", "cache-reference", "cache-nbval", "book-root", "nbval-output"):
                shutil.rmtree(base / sub, ignore_errors=True)
            base.mkdir(parents=True, exist_ok=True)
        else:
            try:
                base = config._tmp_path_factory.mktemp("nadbook", numbered=True)
            except AttributeError:  # tmpdir plugin disabled
                base = Path(tempfile.mkdtemp(prefix="nadbook-"))
        self.base = base
        self.executed = base / "executed"
        self.ref_cache = base / "cache-reference"
        fresh = os.environ.get("NADBOOK_NBVAL_CACHE", "").lower() == "fresh"
        self.nbval_cache = base / "cache-nbval" if fresh else self.ref_cache
        self.nbval_output = base / "nbval-output"
        self.results: dict[Path, Reference] = {}

    def reference(self, chapter: Path) -> Reference:
        chapter = Path(chapter).resolve()
        if chapter not in self.results:
            bb = self.bb
            out = self.executed / f"{chapter.stem}.ipynb"
            t0 = time.perf_counter()
            try:
                with bb.chapter_environment(self.ref_cache, self.executed):
                    bb.execute_chapter(
                        chapter, out, SMOKE, work_dir=self.base / "running", cwd=book_root(), progress_bar=False
                    )
                res = Reference(chapter, out, None, time.perf_counter() - t0)
            except (bb.ChapterFailed, bb.ChapterError) as exc:
                res = Reference(chapter, None, exc, time.perf_counter() - t0)
            self.results[chapter] = res
        return self.results[chapter]

    def all_references(self) -> list[Reference]:
        return [self.reference(c) for c in chapter_sources()]


_RUNS_KEY = pytest.StashKey[SmokeRuns]()


def smoke_runs(config) -> SmokeRuns:
    if _RUNS_KEY not in config.stash:
        config.stash[_RUNS_KEY] = SmokeRuns(config)
    return config.stash[_RUNS_KEY]


#: the tests that read the smoke runs: the chapters' nbval cells and these files
SMOKE_FILES = ("chapters/", "tests/test_book_build.py", "tests/test_browser.py", "tests/test_chapter_facts.py")


def pytest_configure(config):
    """Two workers side by side (pytest-xdist) on a 2-core machine: one thread each, in them and
    in every process their tests start (chapter kernels, build scripts), set before the workers
    start and import numpy and torch. Two processes of two OpenMP or OpenBLAS threads each on two
    cores wait at every barrier for a thread that is not running: a smoke chapter took 4 minutes
    instead of 34 s, a NAD estimate 69 s instead of 10. Runs compared with each other are made
    on one worker, with the same threads."""
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = "1"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Tests side by side (pytest-xdist, ``-n 2`` in pytest.ini): every test of SMOKE_FILES goes
    into one unit of work, which one worker runs (the chapters on the smoke profile once, then
    everything that reads them) while the other takes the rest, one test at a time."""
    from xdist.scheduler import LoadScopeScheduling

    class SmokeTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "smoke" if nodeid.startswith(SMOKE_FILES) else nodeid

    return SmokeTogether(config, log)


def pytest_collection_modifyitems(config, items):
    """A test that reads the smoke runs outside SMOKE_FILES would run the chapters a second time
    on the other worker: refused."""
    stray = [
        i.nodeid for i in items if "smoke" in getattr(i, "fixturenames", ()) and not i.nodeid.startswith(SMOKE_FILES)
    ]
    if stray:
        raise pytest.UsageError(
            "tests that use the `smoke` fixture must live in one of "
            f"{', '.join(SMOKE_FILES)} (tests/conftest.py: SMOKE_FILES): {', '.join(stray[:5])}"
        )


@pytest.fixture
def restore_environ():
    """Starting a Dask LocalCluster sets OMP/MKL/OPENBLAS_NUM_THREADS=1 (and more) in THIS
    process's environment; later kernels (the nbval runs, a chapter run alone) would inherit one
    BLAS thread and round differently from the runs they are compared with. Put it back."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def smoke(request) -> SmokeRuns:
    """The session's smoke-profile reference runs (see the module docstring)."""
    return smoke_runs(request.config)


# ---------------------------------------------------------------------------------------------
# Collection: chapters/*.py -> nbval items
# ---------------------------------------------------------------------------------------------
def pytest_collect_file(file_path, parent):
    if Path(file_path).resolve() == ANCHOR:
        return SmokeChapters.from_parent(parent, name="smoke-chapters", path=Path(file_path))
    return None


class SmokeChapters(pytest.Collector):
    """Yields one ChapterNotebook per chapters/*.py."""

    def collect(self):
        for chapter in chapter_sources():
            yield ChapterNotebook.from_parent(self, path=chapter)


try:
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel
    from nbval.plugin import IPyNbCell, IPyNbFile, find_comment_markers, find_metadata_tags
except ImportError:  # pragma: no cover - nbval is in requirements.txt
    IPyNbFile = None

if IPyNbFile is not None:

    class ChapterProblem(pytest.Item):
        """The chapter cannot even be prepared (no parameters cell, not valid jupytext, ...)."""

        def __init__(self, *, message: str, **kw):
            super().__init__(**kw)
            self.message = message

        def runtest(self):
            raise ChapterProblemError(self.message)

        def repr_failure(self, excinfo):
            if isinstance(excinfo.value, ChapterProblemError):
                return str(excinfo.value)
            return super().repr_failure(excinfo)

        def reportinfo(self):
            return self.path, 0, f"{self.parent.name}: {self.name}"

    class ChapterNotebook(IPyNbFile):
        """nbval's notebook collector, fed from a jupytext chapter parameterised for `smoke`."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # lax mode unless --nbval (strict) is given: only `nbval-check-output` cells compared
            self.compare_outputs = bool(self.config.option.nbval)
            self.items: list[ChapterCell] = []
            self.failure = None  # (code cell number, ChapterFailed) when the reference run failed

        def collect(self):
            from papermill.parameterize import parameterize_notebook

            bb = smoke_runs(self.config).bb
            rel = self.nodeid or self.path.name
            try:
                nb = bb.read_chapter(self.path)
                defaults = bb.parameter_defaults(nb, rel)
                if "profile" not in defaults:
                    raise bb.ChapterError(f"{rel}: the parameters cell must define `profile`")
            except bb.ChapterError as exc:
                yield ChapterProblem.from_parent(self, name="parameters", message=str(exc))
                return
            nb.metadata.setdefault("papermill", {})
            self.nb = parameterize_notebook(nb, dict(SMOKE), kernel_name=bb.KERNEL_NAME, language="python")
            cell_num = 0
            for cell in self.nb.cells:
                if cell.cell_type != "code":
                    continue
                options = defaultdict(bool, find_metadata_tags(cell.metadata))
                options.update(dict(find_comment_markers(cell.source)))
                options.setdefault("check", self.compare_outputs)
                item = ChapterCell.from_parent(
                    self, name=f"Cell {cell_num}", cell_num=cell_num, cell=cell, options=options
                )
                self.items.append(item)
                yield item
                cell_num += 1

        def setup(self):
            if not self.items:  # the chapter could not be prepared (a ChapterProblem item)
                return
            runs = smoke_runs(self.config)
            ref = runs.reference(self.path)
            if ref.error is not None:
                self.failure = (self._failing_cell_num(ref.error), ref.error)
                return  # no kernel: the items report the failure / skip
            import nbformat

            executed = nbformat.read(str(ref.notebook), as_version=4)
            ref_cells = [c for c in executed.cells if c.cell_type == "code"]
            if [c.source for c in ref_cells] != [i.cell.source for i in self.items]:
                raise RuntimeError(
                    f"{self.nodeid}: the executed reference notebook does not have "
                    "the same code cells as the parameterised chapter"
                )
            committed = load_reference(self.path.stem) or []
            checked = [i for i, c in zip(self.items, ref_cells) if is_checked(c)]
            for item, ref_cell in zip(self.items, ref_cells):
                item.cell = ref_cell  # execution_count; outputs of checked cells: the committed ones
            # the k-th checked cell against the reference's k-th: a new first line or another
            # unchecked cell above it needs no new reference; a checked cell more or less does
            if len(committed) != len(checked):
                for item in checked:
                    item.missing_reference = (
                        f"no committed reference output for {self.nodeid}, Cell {item.cell_num}: "
                        f"the chapter has {len(checked)} checked cells, tests/reference/"
                        f"{self.path.stem}.json has {len(committed) or 'none'}; run `python "
                        f"scripts/update_references.py --chapters {self.path.stem}` and commit the file"
                    )
            else:
                for item, r in zip(checked, committed):
                    item.cell.outputs = [nbformat.from_dict(o) for o in r["outputs"]]
            opt = self.config.option
            kernel_name = opt.nbval_kernel_name or CURRENT_ENV_KERNEL_NAME
            with runs.bb.chapter_environment(runs.nbval_cache, runs.nbval_output):
                self.kernel = RunningKernel(
                    kernel_name, cwd=str(book_root()), startup_timeout=opt.nbval_kernel_startup_timeout
                )
            self.setup_sanitize_files()

        def _failing_cell_num(self, error) -> int | None:
            source = getattr(error, "source", None)
            if source is None:
                return None
            idx = getattr(error, "cell_index", None)
            if idx is not None and idx < len(self.nb.cells) and self.nb.cells[idx].source == source:
                return sum(c.cell_type == "code" for c in self.nb.cells[:idx])
            return next((i.cell_num for i in self.items if i.cell.source == source), None)

    class ChapterCell(IPyNbCell):
        """An nbval cell item that knows which chapter it belongs to."""

        def reportinfo(self):
            return self.path, 0, f"{self.parent.nodeid}::{self.name}"

        missing_reference = None

        def compare_outputs(self, test, ref, skip_compare=None):
            """nbval's exact comparison, or failing that the tolerant one of
            tests/reference_outputs.py (trained numbers differ a little between CPUs)."""
            if super().compare_outputs(test, ref, skip_compare):
                return True
            if outputs_agree(ref, test, is_near_chance(self.cell)):
                self.comparison_traceback = []
                return True
            return False

        def runtest(self):
            if self.missing_reference:
                raise ReferenceMissing(self.missing_reference)
            failure = self.parent.failure
            if failure is not None:
                num, error = failure
                if num is None or num == self.cell_num:
                    raise ReferenceRunError(error)
                state = "before" if self.cell_num < num else "after"
                pytest.skip(f"not re-run: {self.parent.nodeid} fails at Cell {num} (this cell is {state} it)")
            super().runtest()

        def repr_failure(self, excinfo):
            exc = excinfo.value
            chapter = self.parent.nodeid
            if isinstance(exc, ReferenceMissing):
                return str(exc)
            if isinstance(exc, ReferenceRunError):
                return f"{chapter} fails on the smoke profile (papermill run, Cell {self.cell_num}):\n{exc.error}"
            text = super().repr_failure(excinfo)
            if "Cell outputs differ" in str(exc):
                head = (
                    f"{chapter}, Cell {self.cell_num}: this `nbval-check-output` cell printed "
                    "something else than the committed reference (tests/reference/; smoke "
                    "profile). If the change is intended, regenerate it with `python "
                    "scripts/update_references.py` and commit it"
                )
            else:
                head = f"{chapter}, Cell {self.cell_num} raised when nbval re-ran the chapter"
            return f"{head}\n{text}"

    class ReferenceRunError(Exception):
        def __init__(self, error):
            super().__init__(str(error))
            self.error = error

    class ChapterProblemError(Exception):
        pass

    class ReferenceMissing(Exception):
        pass


# ---------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _RUNS_KEY not in config.stash:
        return
    runs = config.stash[_RUNS_KEY]
    if not runs.results:
        return
    tr = terminalreporter
    tr.section("chapters on the smoke profile (papermill reference runs)")
    for ref in runs.results.values():
        status = "ok" if ref.error is None else f"FAILED ({type(ref.error).__name__})"
        tr.write_line(f"{ref.chapter.stem:32s} {ref.seconds:7.1f} s  {status}")
    tr.write_line(f"executed notebooks: {runs.executed}")
