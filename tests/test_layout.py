"""The package layout: subpackages in layers, imports that only point down, no cycles, no imports
of another module's private names, nothing compiled or computed at import time."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "nadcore"

#: top to bottom: a module may import from its own subpackage and from the layers below it
LAYERS = ["__main__", "chapters", "book", "train", "nads", "kernels", "nets", "data", "theory", "runtime"]


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(path: Path, name: str):
    """``(imported module, names, line, top_level)`` for every nadcore import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("nadcore"):
                    yield a.name, [], node.lineno, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([mod] if mod else []))
            if mod.startswith("nadcore"):
                yield mod, [a.name for a in node.names], node.lineno, id(node) in top


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _resolve(module: str, names: list[str], known: set[str]) -> list[str]:
    """The modules an import statement loads: ``from nadcore.x import y`` is module nadcore.x.y
    when that is a module, else an attribute of nadcore.x."""
    subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
    return subs + ([module] if len(subs) < len(names) or not names else [])


def test_top_level_is_small():
    entries = [p.name for p in PKG.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 12, sorted(entries)
    assert {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS) - {
        "__main__",
        "runtime",
    }


def test_imports_point_down():
    mods = _modules()
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    bad = []
    for name, path in mods.items():
        mine = _layer(name)
        for mod, names, line, _ in _imports(path, name):
            for target in _resolve(mod, names, set(mods)):
                theirs = _layer(target)
                if mine is None or theirs is None or theirs == mine:
                    continue
                if rank[theirs] <= rank[mine]:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name} ({mine}) imports {target} ({theirs})")
    assert not bad, "imports that point up or sideways:\n" + "\n".join(bad)


def test_no_import_cycles():
    mods = _modules()
    graph = {name: set() for name in mods}
    for name, path in mods.items():
        for mod, names, _, top in _imports(path, name):
            if top:
                graph[name] |= {t for t in _resolve(mod, names, set(mods)) if t in mods and t != name}
    # a package's __init__ importing its own submodules is not a cycle of the submodules'
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph[n]:
            if state.get(m) == 1:
                cyc = stack[stack.index(m) :] + [m]
                if not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in zip(cyc, cyc[1:])):
                    cycles.append(" -> ".join(cyc))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_private_names_across_modules():
    mods = _modules()
    bad = [
        f"{p.relative_to(ROOT)}:{line}: from {mod} import {n}"
        for name, p in mods.items()
        for mod, names, line, _ in _imports(p, name)
        for n in names
        if n.startswith("_") and mod != name
    ]
    assert not bad, "\n".join(bad)


#: function-level imports of nadcore modules that load an optional heavy package, and why
DEFERRED = {
    ("nadcore.__main__", "nadcore.chapters.nads.figures"): "matplotlib, needed by the `show` command only",
    ("nadcore.__main__", "nadcore.chapters.nad_atlas.figures"): "matplotlib, needed by `predict --out map.png` only",
}


def test_nadcore_imports_at_module_level():
    """Function-level imports hide the dependency graph: nadcore modules are imported at the top
    (function-level imports are kept for optional heavy third-party packages only)."""
    mods = _modules()
    bad = [
        f"{p.relative_to(ROOT)}:{line}: {mod}"
        for name, p in mods.items()
        for mod, _, line, top in _imports(p, name)
        if not top and (name, mod) not in DEFERRED
    ]
    assert not bad, "\n".join(bad)


def test_import_compiles_and_computes_nothing(tmp_path):
    """``import nadcore`` and its subpackages run no compiler: the native library's folder stays
    empty until a kernel is asked for."""
    code = "import nadcore, nadcore.book, nadcore.chapters, nadcore.kernels, nadcore.nads, nadcore.train"
    env = {
        "NADCORE_NATIVE_DIR": str(tmp_path / "native"),
        "PATH": "/nonexistent",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "native").exists() or not any((tmp_path / "native").iterdir())


@pytest.mark.parametrize("layer", [x for x in LAYERS if x not in ("__main__", "runtime")])
def test_every_subpackage_says_what_it_holds(layer):
    doc = ast.get_docstring(ast.parse((PKG / layer / "__init__.py").read_text()))
    assert doc and len(doc) > 40, f"nadcore/{layer}/__init__.py needs a docstring saying what it holds"


# --------------------------------------------------------------------------------------------
# The chapters' pages: the science, not the plumbing
# --------------------------------------------------------------------------------------------
sys.path.insert(0, str(ROOT / "scripts"))
import chapter_lines  # noqa: E402  (scripts/chapter_lines.py: the count the closing notes report)

CHAPTER_FILES = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))


def _code_lines(path):
    """(line number, text) of every line of the chapter's code cells, the parameters cell included."""
    kind = None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("# %%"):
            kind = "markdown" if "[markdown]" in line else "code"
        elif kind == "code":
            yield n, line


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=[p.stem for p in CHAPTER_FILES])
def test_a_chapter_shows_the_science(path):
    """No helper definitions in a chapter, no code line that scrolls sideways in the book (88
    characters), and at least 70% of its code lines compute, draw or print a paper quantity
    (``python scripts/chapter_lines.py`` counts them); the plumbing lives in the chapter's
    package, ``nadcore/chapters/<name>/``."""
    r = chapter_lines.count(path)
    assert not r["defines functions"], f"{path.name} defines functions: move them to its package"
    assert r["longest line"] <= 88, f"{path.name} has a code line of {r['longest line']} characters"
    long = [n for n, line in _code_lines(path) if len(line) > 88]  # comments and parameters too
    assert not long, f"{path.name}: code-cell lines {long} are over 88 characters (they scroll sideways)"
    assert r["science share"] >= 0.70, (
        f"{path.name}: {r['science']} of {r['code lines']} code lines are "
        f"science ({r['science share']:.0%}), fewer than 70%"
    )


def _dynamic_imports(path: Path):
    """``(line, target)`` of every call that imports a module by name (``importlib.import_module``,
    ``__import__``): ``target`` is the name where it is a literal (an f-string's literal head),
    else None."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in ("import_module", "__import__") or not node.args:
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            yield node.lineno, arg.value
        elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            yield node.lineno, str(arg.values[0].value)
        else:
            yield node.lineno, None


def test_dynamic_imports_point_down_too():
    """An import by name obeys the layers as an import statement does: the book layer looks up no
    chapter by name (the chapters register their settings and claims with it), and no module
    imports a nadcore module above its own layer by a computed name. (The model registry imports
    a reader's ``module:factory``, which is not nadcore.)"""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    bad = []
    for name, path in _modules().items():
        mine = _layer(name)
        for line, target in _dynamic_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if target is None:
                if mine != "nets":  # the registry's reader-supplied factories
                    bad.append(f"{where}: imports a module by a computed name")
                continue
            if not target.startswith("nadcore"):
                continue
            theirs = _layer(target.rstrip(".")) or target.split(".")[1] if "." in target else None
            if mine and theirs in rank and rank[theirs] < rank[mine]:
                bad.append(f"{where}: {name} ({mine}) imports {target} ({theirs}) by name")
    assert not bad, "\n".join(bad)
