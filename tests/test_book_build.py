"""The book renders with warnings as errors and works offline (no CDN), from the smoke notebooks.

The chapters are not executed again here: the session's papermill reference runs (tests/conftest.py,
shared with the nbval tests) are staged into a scratch book root with this repository's
_config.yml and book/ pages, and rendered with ``scripts/build_book.py --no-execute``
(``jupyter-book build --builder html -W --keep-going``). The real book/executed/ and _build/ are
left alone.
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import REPO, _load_build_book, book_root, chapter_sources

bb = _load_build_book()

# (tag, attribute) pairs whose URL the browser fetches when the page loads
FETCHED = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("audio", "src"),
    ("video", "src"),
    ("embed", "src"),
    ("object", "data"),
    ("script", "data-jupyter-widgets-cdn"),
}
LINK_RELS_FETCHED = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "icon",
    "shortcut icon",
    "manifest",
    "dns-prefetch",
    "preconnect",
}


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "link" and (attrs.get("rel") or "").lower() not in LINK_RELS_FETCHED:
            return
        for t, a in FETCHED:
            if t == tag and attrs.get(a):
                self.refs.append((tag, a, attrs[a]))


def page_refs(path: Path) -> list[tuple[str, str, str]]:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    return p.refs


def is_remote(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme in ("http", "https") or url.startswith("//") or "cdn" in parts.netloc)


@pytest.fixture(scope="session")
def built_book(smoke):
    """(html dir, {stem: Reference}, jupyter-book exit status) of the smoke book."""
    missing = bb.missing_web_assets(REPO)
    if missing:
        pytest.fail(f"book/static/vendor/ is missing {', '.join(missing)}: run `bash scripts/install.sh`")
    refs = {r.chapter.stem: r for r in smoke.all_references()}
    root = smoke.base / "book-root"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    shutil.copy2(REPO / "_config.yml", root / "_config.yml")
    shutil.copytree(REPO / "book", root / "book", ignore=shutil.ignore_patterns("executed", "static"))
    (root / "book" / "static").symlink_to(REPO / "book" / "static", target_is_directory=True)
    shutil.copy2(REPO / "_toc.yml", root / "_toc.yml")
    (root / "chapters").symlink_to(book_root() / "chapters", target_is_directory=True)
    (root / "nadcore").symlink_to(REPO / "nadcore", target_is_directory=True)  # literalinclude
    executed = root / "book" / "executed"
    executed.mkdir()
    for stem, ref in refs.items():
        if ref.notebook is not None:
            shutil.copy2(ref.notebook, executed / f"{stem}.ipynb")
    for sub in ("claims", "data"):  # what the smoke runs wrote beside their notebooks
        if (smoke.executed / sub).is_dir():
            shutil.copytree(smoke.executed / sub, executed / sub)
    rc = bb.main(["--root", str(root), "--no-execute"])
    return root / "_build" / "html", refs, rc


def test_book_builds_with_warnings_as_errors(built_book):
    html, refs, rc = built_book
    assert rc == 0, (
        "jupyter-book build -W failed on the smoke notebooks (its output, with the "
        "warnings, is in the captured stdout above)"
    )
    assert (html / "index.html").exists()


def test_every_chapter_has_a_page(built_book):
    html, refs, rc = built_book
    assert (html / "book" / "intro.html").exists() and (html / "book" / "references.html").exists()
    failed = {s: r.error for s, r in refs.items() if r.error is not None}
    missing = [
        s for s, r in refs.items() if r.error is None and not (html / "book" / "executed" / f"{s}.html").exists()
    ]
    assert not missing, f"no HTML page for chapter(s) {missing}"
    assert not failed, "chapter(s) failed on the smoke profile, so they have no page:\n" + "\n".join(
        f"- {s}: {str(e).splitlines()[0]}" for s, e in failed.items()
    )
    assert set(refs) == {c.stem for c in chapter_sources()}


def test_no_cdn_requests(built_book):
    html, _, _ = built_book
    pages = sorted(html.rglob("*.html"))
    assert pages
    remote = [
        (str(p.relative_to(html)), f"<{t} {a}={u!r}>") for p in pages for (t, a, u) in page_refs(p) if is_remote(u)
    ]
    assert not remote, "pages load remote resources:\n" + "\n".join(f"{p}: {r}" for p, r in remote)


def _local_target(page: Path, url: str) -> Path:
    return (page.parent / urlsplit(url).path).resolve()


def test_mathjax_served_locally(built_book):
    html, _, _ = built_book
    intro = html / "book" / "intro.html"
    mathjax = [u for (t, a, u) in page_refs(intro) if t == "script" and "mathjax" in u.lower()]
    assert mathjax, "book/intro.html loads no MathJax script"
    for url in mathjax:
        assert not is_remote(url)
        assert _local_target(intro, url).is_file(), f"MathJax script {url} not in the built HTML"
    fonts = html / "_static" / "vendor" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert fonts.is_dir() and any(fonts.iterdir()), "MathJax's CHTML fonts are not in the built HTML"


def test_intro_equations_are_typeset_by_mathjax(built_book):
    html, _, _ = built_book
    text = (html / "book" / "intro.html").read_text(encoding="utf-8")
    assert 'class="math notranslate nohighlight"' in text, "display math not rendered as a math block"
    assert r"\mathbb{E}_{\theta}" in text
    assert "$$" not in text, "raw $$ left in the page: is myst's dollarmath extension enabled?"


def test_widget_manager_served_locally(built_book):
    html, _, _ = built_book
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "application/vnd.jupyter.widget-state+json" not in text:
            continue
        srcs = [u for (t, a, u) in page_refs(page) if t == "script" and a == "src"]
        for name in ("require.js", "embed-amd.js"):
            hits = [u for u in srcs if urlsplit(u).path.endswith(name)]
            assert hits, f"{page.relative_to(html)} has widgets but loads no {name}"
            assert _local_target(page, hits[0]).is_file(), f"{hits[0]} missing from the built HTML"
