"""The built book in a real browser: Playwright driving Debian's Chromium, fully offline.

The smoke book rendered by tests/test_book_build.py (same session, nothing executed again) is
served from 127.0.0.1 by a local HTTP server. Every page is opened in headless Chromium and must

* make no request to any host but 127.0.0.1 (requests elsewhere are recorded and aborted),
  and get no HTTP error for its own assets;
* log no console error and throw no JavaScript exception;
* have its math typeset by the locally served MathJax: every ``.math`` element holds a MathJax
  container and no raw TeX (``$$``, ``\\(``, ``\\[``, ``\\begin``, ``$..\\cmd..$``) is left in the text
  outside code;
* load every image (``naturalWidth > 0``), and show every figure of a cell at no less than
  :data:`MIN_FIGURE_SCALE` of its size (else its labels cannot be read);
* render every embedded ipywidget view (widget state stored by papermill, manager served locally).

The Scorecard page must show every verdict badge without horizontal scrolling at 1280 px (checked
on the book's page and on a page rendered alone from tests/fixtures/scorecard.json by
scripts/preview_scorecard.py, which needs no smoke book).

Then the NAD explorer of chapter 2: moving its slider changes the NAD shown (image and text),
and choosing another architecture changes it again. A full-page screenshot of each page and
before/after shots of the explorer go to ``$NADBOOK_TEST_ARTIFACTS/screenshots`` (default
``test-artifacts/screenshots``).

Chromium is not optional: without ``/usr/bin/chromium`` (or ``$NADBOOK_CHROMIUM``) or the
``playwright`` package the tests FAIL with the command that installs them. Set
``NADBOOK_BROWSER_HTML=_build/html`` to check an already built book (e.g. the cpu-profile build of
``python scripts/build_book.py``) instead of the smoke book.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import REPO, chapter_sources

CHROMIUM = os.environ.get("NADBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTALL_HINT = (
    "run `bash scripts/install.sh` (it installs Debian's `chromium` with apt-get and the "
    "`playwright` Python package from requirements.txt; no browser download needed)"
)
EXTERNAL_HTML = os.environ.get("NADBOOK_BROWSER_HTML")
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_MS = 30_000

# Raw TeX that MathJax should have replaced (searched in the page text outside code blocks).
RAW_TEX = [
    (re.compile(r"\$\$"), "$$"),
    (re.compile(r"\\\(|\\\)"), r"\( \)"),
    (re.compile(r"\\\[|\\\]"), r"\[ \]"),
    (re.compile(r"\\begin\{"), r"\begin{"),
    (re.compile(r"(?<![\w$])\$[^$\n]{0,80}?\\[A-Za-z]+[^$\n]{0,80}?\$"), "$...\\cmd...$"),
]


def _screenshot_dir() -> Path:
    base = os.environ.get("NADBOOK_TEST_ARTIFACTS")
    d = Path(base).resolve() / "screenshots" if base else REPO / "test-artifacts" / "screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


def expected_pages() -> list[str]:
    """Pages to open, known at collection time: the book's own pages and one per chapter."""
    if EXTERNAL_HTML:
        root = Path(EXTERNAL_HTML)
        return sorted(str(p.relative_to(root)) for p in _html_pages(root)) or ["index.html"]
    return [
        "index.html",
        "book/intro.html",
        "book/references.html",
        "book/executed/scorecard.html",
        "genindex.html",
        "search.html",
    ] + [f"book/executed/{c.stem}.html" for c in chapter_sources()]


def _html_pages(root: Path) -> list[Path]:
    skip = {"_static", "_sources", "_images"}
    return [p for p in Path(root).rglob("*.html") if not skip & set(p.relative_to(root).parts)]


# ---------------------------------------------------------------------------------------------
# Fixtures: the built book, a local server, the browser
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def book_html(request) -> Path:
    """The rendered smoke book (reused from tests/test_book_build.py when it ran this session)."""
    if EXTERNAL_HTML:
        html = Path(EXTERNAL_HTML).resolve()
        if not (html / "index.html").exists():
            pytest.fail(f"NADBOOK_BROWSER_HTML={EXTERNAL_HTML}: no index.html there")
        return html
    smoke = request.getfixturevalue("smoke")
    html = smoke.base / "book-root" / "_build" / "html"
    if not (html / "index.html").exists():  # e.g. `pytest tests/test_browser.py` alone
        import test_book_build

        fixture = test_book_build.built_book
        build = getattr(fixture, "_get_wrapped_function", None)
        build = build() if build else getattr(fixture, "__wrapped__", fixture)
        html, _, rc = build(smoke)
        if rc != 0:
            pytest.fail("the smoke book did not build (see tests/test_book_build.py)")
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    """Base URL of ``directory`` served on 127.0.0.1 (random free port) while the block runs."""
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(book_html):
    """Base URL of ``book_html`` served on 127.0.0.1 (random free port)."""
    with serve(book_html) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    exe = shutil.which(CHROMIUM) or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if not exe:
        pytest.fail(f"Chromium not found at {CHROMIUM}: {INSTALL_HINT}", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"the `playwright` Python package is missing: {INSTALL_HINT}", pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


class PageLog:
    """Everything a page did that the checks look at, recorded while it was open."""

    def __init__(self):
        self.external: list[str] = []
        self.http_errors: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []


def open_page(browser, base: str, rel: str):
    """(context, page, log) with ``rel`` loaded and its scripts (MathJax, widgets) settled."""
    ctx = browser.new_context(viewport=VIEWPORT, service_workers="block")
    log = PageLog()

    def route(r):
        host = urlsplit(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            log.external.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)

    def on_console(msg):
        if msg.type != "error":
            return
        where = (msg.location or {}).get("url", "")
        # Chromium asks every server for /favicon.ico by itself; the book has none to offer
        if urlsplit(where).path == "/favicon.ico":
            return
        log.console_errors.append(f"{msg.text} ({where})" if where else msg.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: log.page_errors.append(str(exc)))
    page.on(
        "response",
        lambda r: (
            r.status >= 400 and urlsplit(r.url).path != "/favicon.ico" and log.http_errors.append(f"{r.status} {r.url}")
        ),
    )
    page.goto(base + rel, wait_until="load")
    page.wait_for_load_state("networkidle")
    _settle(page)
    return ctx, page, log


def _settle(page):
    """Wait for MathJax to finish and for every embedded widget view to be rendered."""
    page.evaluate("""async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise)
        await MathJax.startup.promise; }""")
    n_views = page.evaluate("""() => document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]').length""")
    if n_views:
        try:
            page.wait_for_function(RENDERED_JS + "() => unrendered().length === 0", timeout=TIMEOUT_MS)
        except Exception:  # noqa: BLE001 - reported by the widget check
            pass
    # images: load lazy ones too, then wait until every image settled
    page.evaluate("""async () => {
        const imgs = Array.from(document.images);
        imgs.forEach(i => { i.loading = 'eager'; });
        await Promise.all(imgs.map(i => i.complete ? null : new Promise(res => {
            i.addEventListener('load', res); i.addEventListener('error', res);
            setTimeout(res, 10000); })));
    }""")


RENDERED_JS = """
const unrendered = () => Array.from(document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]')).filter(s => {
    const prev = s.previousElementSibling;
    return !(prev && prev.classList.contains('widget-subarea') && prev.childElementCount > 0);
});
"""

PAGE_FACTS_JS = (
    RENDERED_JS
    + """
() => {
  const skip = 'pre, code, script, style, textarea, noscript, mjx-container, .MathJax, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && !el.closest(skip)) parts.push(n.nodeValue);
  }
  const math = Array.from(document.querySelectorAll('.math'));
  return {
    text: parts.join(' '),
    math: math.length,
    untypeset: math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
    mjx: document.querySelectorAll('mjx-container').length,
    mathjax: !!(window.MathJax && window.MathJax.version),
    images: Array.from(document.images).map(i => ({
        src: i.currentSrc.startsWith('data:') ? i.currentSrc.slice(0, 40) + '...' : i.currentSrc,
        ok: i.complete && i.naturalWidth > 0,
        // a cell's figure drawn narrower than it was made: its text shrinks by the same factor
        scale: i.closest('.cell_output') && i.naturalWidth > 0 ? i.clientWidth / i.naturalWidth : 1})),
    views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    unrendered: unrendered().length,
    // code cells (the chapter's source, not its outputs) wider than their box: they scroll sideways
    scrolling: Array.from(document.querySelectorAll('.cell_input pre')).filter(
        pre => pre.scrollWidth > pre.clientWidth + 1).map(pre => pre.textContent.split('\\n')[0].slice(0, 60)),
    outputs: Array.from(document.querySelectorAll('.cell_output')).map(o => o.textContent).join('\\n'),
    title: document.title,
    url: location.href,
  };
}
"""
)


#: the least a cell's figure may be scaled down to fit the page: below it, its 8-10 pt labels read
#: at under 4 pt (a figure twice and a half as wide as the page, five panels in a row)
MIN_FIGURE_SCALE = 0.4

#: a path of the machine that built the book, in a cell's output (a reader's machine has other ones)
MACHINE_PATH = re.compile(r"(?:PosixPath\(|(?<![\w.])/(?:tmp|home|root|work|usr|var|opt)/)[^\s'\")]*")


def _shot_name(rel: str, suffix: str = "") -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", rel.removesuffix(".html")) + suffix


# ---------------------------------------------------------------------------------------------
# Every page
# ---------------------------------------------------------------------------------------------
PAGES = expected_pages()


@pytest.mark.parametrize("rel", PAGES)
def test_page_in_browser(rel, book_html, server, browser):
    if not (book_html / rel).exists():
        pytest.fail(f"{rel} was not built (see tests/test_book_build.py)")
    ctx, page, log = open_page(browser, server, rel)
    try:
        facts = page.evaluate(PAGE_FACTS_JS)
        shot = _screenshot_dir() / _shot_name(rel, ".png")
        page.screenshot(path=str(shot), full_page=True)
    finally:
        ctx.close()
    problems = []
    if log.external:
        problems.append("requests left 127.0.0.1 (aborted): " + ", ".join(log.external[:10]))
    if log.http_errors:
        problems.append("HTTP errors for the page's own assets: " + ", ".join(log.http_errors[:10]))
    if log.page_errors:
        problems.append("JavaScript exceptions: " + " | ".join(log.page_errors[:10]))
    if log.console_errors:
        problems.append("console errors: " + " | ".join(log.console_errors[:10]))
    raw = sorted({label for rx, label in RAW_TEX if rx.search(facts["text"])})
    if raw:
        snippet = next(m.group(0) for rx, _ in RAW_TEX if (m := rx.search(facts["text"])))
        problems.append(f"raw TeX left in the page text ({', '.join(raw)}), e.g. {snippet[:80]!r}")
    if facts["math"]:
        if not facts["mathjax"]:
            problems.append(f"{facts['math']} math element(s) but MathJax did not load")
        elif facts["untypeset"]:
            problems.append(
                f"{len(facts['untypeset'])} of {facts['math']} math element(s) not typeset "
                f"by MathJax, e.g. {facts['untypeset'][0]!r}"
            )
    broken = [i["src"] for i in facts["images"] if not i["ok"]]
    if broken:
        problems.append(f"{len(broken)} of {len(facts['images'])} image(s) did not load: {broken[:5]}")
    small = [f"{i['src']} at {i['scale']:.0%}" for i in facts["images"] if i["ok"] and i["scale"] < MIN_FIGURE_SCALE]
    if small:
        problems.append(
            f"{len(small)} figure(s) shrunk below {MIN_FIGURE_SCALE:.0%} of their size to fit the page "
            f"at {VIEWPORT['width']} px, so their labels are unreadable (too many panels in a row, or "
            f"a title wider than the panels): {small[:3]}"
        )
    if facts["unrendered"]:
        problems.append(
            f"{facts['unrendered']} of {facts['views']} widget view(s) not rendered "
            "(widget state missing from the notebook, or the widget manager failed)"
        )
    if facts["scrolling"]:
        problems.append(
            f"{len(facts['scrolling'])} code cell(s) scroll sideways at {VIEWPORT['width']} px, "
            f"e.g. {facts['scrolling'][0]!r}"
        )
    paths = MACHINE_PATH.findall(facts["outputs"])
    if paths:
        problems.append(f"a machine path in the outputs: {paths[0]!r}")
    summary = (
        f"{rel}: {facts['math']} math element(s), {facts['mjx']} MathJax container(s), "
        f"{len(facts['images'])} image(s), {facts['views']} widget view(s); screenshot {shot}"
    )
    print(summary)
    assert not problems, summary + "\n- " + "\n- ".join(problems)


def test_every_built_page_is_checked(book_html):
    built = {str(p.relative_to(book_html)) for p in _html_pages(book_html)}
    unchecked = sorted(built - set(PAGES))
    assert not unchecked, f"pages not opened by test_page_in_browser: {unchecked}"


# ---------------------------------------------------------------------------------------------
# The interactive figures
# ---------------------------------------------------------------------------------------------
SHOWN_NAD_JS = """(root) => {
  const imgs = Array.from(root.querySelectorAll('img.nadx-img')).filter(i => i.offsetParent !== null);
  const info = Array.from(root.querySelectorAll('.nad-explorer-info')).filter(i => i.offsetParent !== null);
  return {srcs: imgs.map(i => i.src), alts: imgs.map(i => i.alt),
          ok: imgs.every(i => i.complete && i.naturalWidth > 0),
          info: info.map(i => i.textContent).join(' | ')};
}"""


#: how a page holds a NAD explorer: the widget's class in its saved state, or the HTML version's
#: root element (the class name alone also occurs in the explorers' shared CSS)
_NAD_EXPLORER = re.compile(r'"_dom_classes": \[[^\]]*"nad-explorer"|class=\\?"nad-explorer[ "\\]')


def _explorer_pages(book_html) -> list[str]:
    return sorted(
        str(p.relative_to(book_html))
        for p in _html_pages(book_html)
        if _NAD_EXPLORER.search(p.read_text(encoding="utf-8", errors="replace"))
    )


def test_nad_explorer_slider_changes_the_nad(book_html, server, browser):
    pages = _explorer_pages(book_html)
    assert pages, "no page holds a NAD explorer (chapters/02_nads.py should call nadcore.book.explorer.nad_explorer)"
    shots = _screenshot_dir()
    for rel in pages:
        ctx, page, log = open_page(browser, server, rel)
        try:
            root = page.locator(".nad-explorer").first
            root.wait_for(state="visible")
            root.scroll_into_view_if_needed()
            before = root.evaluate(SHOWN_NAD_JS)
            assert len(before["srcs"]) == 2 and before["ok"], f"{rel}: explorer shows no NAD: {before}"
            root.screenshot(path=str(shots / _shot_name(rel, "__nad-explorer-before.png")))
            # the slider: the widget's noUiSlider handle, or the range input of the HTML version
            handle = root.locator(".noUi-handle, input.nadx-slider").first
            handle.focus()
            for _ in range(3):
                handle.press("ArrowRight")
            page.wait_for_function(
                "([el, src]) => Array.from(el.querySelectorAll('img.nadx-img'))"
                ".some(i => i.offsetParent !== null && i.src !== src)",
                arg=[root.element_handle(), before["srcs"][0]],
                timeout=10_000,
            )
            after = root.evaluate(SHOWN_NAD_JS)
            root.screenshot(path=str(shots / _shot_name(rel, "__nad-explorer-after.png")))
            assert after["ok"] and after["srcs"][0] != before["srcs"][0]
            assert after["info"] != before["info"], "the NAD changed but its text did not"
            assert re.search(r"NAD 3(?!\d)", after["info"]), after["info"]  # indices 0..15 come first
            # another architecture: the same NAD index of another network
            select = root.locator("select").first
            options = [o.replace("\xa0", " ").strip() for o in select.locator("option").all_text_contents()]
            assert len(options) >= 2, "the explorer offers a single architecture"
            select.select_option(index=1)
            page.wait_for_function(
                "([el, src]) => Array.from(el.querySelectorAll('img.nadx-img'))"
                ".some(i => i.offsetParent !== null && i.src !== src)",
                arg=[root.element_handle(), after["srcs"][0]],
                timeout=10_000,
            )
            other = root.evaluate(SHOWN_NAD_JS)
            assert options[1] in other["info"] and re.search(r"NAD 3(?!\d)", other["info"]), other["info"]
            root.screenshot(path=str(shots / _shot_name(rel, "__nad-explorer-other-arch.png")))
        finally:
            ctx.close()
        assert not (log.page_errors or log.console_errors), (log.page_errors, log.console_errors)


def test_direction_explorer_shows_the_selected_direction(book_html, server, browser):
    pages = sorted(
        str(p.relative_to(book_html))
        for p in _html_pages(book_html)
        if "direction-explorer" in p.read_text(encoding="utf-8", errors="replace")
    )
    assert pages, "no page shows the direction explorer: chapter 3 calls nadcore.book.explorer.direction_explorer"
    for rel in pages:
        ctx, page, log = open_page(browser, server, rel)
        try:
            root = page.locator(".direction-explorer").first
            root.scroll_into_view_if_needed()
            img = root.locator(".dirx-detail img").first
            before = img.get_attribute("src")
            cells = root.locator(".dirx-cell")
            n = cells.count()
            assert n > 1
            target = cells.nth(n - 1)  # a corner: the highest frequency, not the initial cell
            target.hover()
            page.wait_for_function(
                "([img, src]) => img.src !== src", arg=[img.element_handle(), before], timeout=10_000
            )
            info = root.locator(".dirx-info").inner_text()
            assert "%" in info or "not measured" in info
            root.screenshot(path=str(_screenshot_dir() / _shot_name(rel, "__direction-explorer.png")))
        finally:
            ctx.close()
        assert not (log.page_errors or log.console_errors), (log.page_errors, log.console_errors)


# ---------------------------------------------------------------------------------------------
# The Scorecard page: every verdict visible at 1280 px, without scrolling sideways
# ---------------------------------------------------------------------------------------------
SCORECARD_PAGE = "book/executed/scorecard.html"

VERDICTS_JS = """() => {
  window.scrollTo(0, 0);
  const vw = document.documentElement.clientWidth;
  const badges = Array.from(document.querySelectorAll('.nad-verdict')).map(el => {
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    let clippedBy = null;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX !== 'visible') {
        const ar = a.getBoundingClientRect();
        if (r.left < ar.left - 0.5 || r.right > ar.right + 0.5) { clippedBy = a.tagName + '.' + a.className; break; }
      }
    }
    const summary = el.closest('summary');
    const link = summary ? summary.querySelector('a') : null;
    return {text: el.textContent.trim(), verdict: el.dataset.verdict, claim: link ? link.textContent.trim() : '',
            left: r.left + window.scrollX, right: r.right + window.scrollX, width: r.width, height: r.height,
            shown: st.visibility !== 'hidden' && st.display !== 'none' && parseFloat(st.opacity) > 0.5,
            colour: st.backgroundColor, clippedBy};
  });
  const claims = Array.from(document.querySelectorAll('details.nad-claim'));
  return {vw, scrollWidth: document.documentElement.scrollWidth, badges,
          claims: claims.length,
          claimsWithOneBadge: claims.filter(d => d.querySelectorAll(':scope > summary .nad-verdict').length === 1).length,
          images: Array.from(document.images).filter(i => i.src.includes('forest-')).map(i => i.complete && i.naturalWidth > 0),
          text: document.body.innerText};
}"""


def scorecard_problems(page, n_claims: int | None) -> tuple[dict, list[str]]:
    """(facts, problems) of the Scorecard page open in ``page`` at the 1280 px viewport."""
    facts = page.evaluate(VERDICTS_JS)
    problems = []
    badges = [b for b in facts["badges"] if b["claim"]]
    if n_claims is not None and (facts["claims"] != n_claims or len(badges) != n_claims):
        problems.append(
            f"{n_claims} claims in scorecard.json, {facts['claims']} claim lines and "
            f"{len(badges)} verdict badges on the page"
        )
    if facts["claimsWithOneBadge"] != facts["claims"]:
        problems.append(f"{facts['claims'] - facts['claimsWithOneBadge']} claim line(s) without exactly one badge")
    for b in facts["badges"]:
        where = b["claim"] or b["text"]
        if not b["shown"] or b["width"] <= 0 or b["height"] <= 0:
            problems.append(f"verdict badge of {where} is not shown")
        elif b["left"] < 0 or b["right"] > facts["vw"] + 0.5:
            problems.append(
                f"verdict badge of {where} lies outside the {facts['vw']} px viewport "
                f"(x from {b['left']:.0f} to {b['right']:.0f}): it needs horizontal scrolling"
            )
        elif b["clippedBy"]:
            problems.append(f"verdict badge of {where} is cut off by a scrolling container {b['clippedBy']}")
        if b["verdict"] not in b["text"]:
            problems.append(f"badge of {where} does not say its verdict in words: {b['text']!r}")
    if facts["scrollWidth"] > facts["vw"] + 1:
        problems.append(f"the page scrolls sideways: {facts['scrollWidth']} px wide in a {facts['vw']} px window")
    if not all(facts["images"]):
        problems.append(f"{facts['images'].count(False)} forest plot(s) did not load")
    if re.search(r"np\.\w+\(|np\.(True|False)_", facts["text"]):
        problems.append("numpy reprs on the page: " + re.search(r".{0,40}np\.\w+.{0,20}", facts["text"]).group(0))
    return facts, problems


def _claims_in_json(html_root: Path) -> int | None:
    found = sorted(Path(html_root).glob("_downloads/*/scorecard.json"))
    return len(json.loads(found[0].read_text())["claims"]) if found else None


def test_scorecard_verdicts_visible_at_1280(book_html, server, browser):
    if not (book_html / SCORECARD_PAGE).exists():
        pytest.fail(f"{SCORECARD_PAGE} was not built")
    ctx, page, _ = open_page(browser, server, SCORECARD_PAGE)
    try:
        facts, problems = scorecard_problems(page, _claims_in_json(book_html))
        page.screenshot(path=str(_screenshot_dir() / _shot_name(SCORECARD_PAGE, "__first-screen.png")))
    finally:
        ctx.close()
    assert not problems, "\n- ".join([f"{SCORECARD_PAGE}:"] + problems)


@pytest.fixture(scope="module")
def fixture_scorecard(tmp_path_factory):
    """(html root, number of claims) of the Scorecard page rendered alone from the fixture."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "nadbook_preview_scorecard", REPO / "scripts" / "preview_scorecard.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    page, rc = mod.build_preview(
        mod.FIXTURE,
        tmp_path_factory.mktemp("scorecard-preview"),
        (["Fig. 6: 1 of 4 networks"], ["Fig. 6: ResNet-18, VGG-11"]),
        quiet=True,
    )
    assert rc == 0 and page.exists(), (
        "jupyter-book could not build the Scorecard preview (scripts/preview_scorecard.py)"
    )
    return page.parents[2], len(json.loads(mod.FIXTURE.read_text())["claims"])


def test_fixture_scorecard_verdicts_visible_at_1280(fixture_scorecard, browser):
    html, n_claims = fixture_scorecard
    with serve(html) as base:
        ctx, page, _ = open_page(browser, base, SCORECARD_PAGE)
        try:
            facts, problems = scorecard_problems(page, n_claims)
            shots = _screenshot_dir()
            page.screenshot(path=str(shots / "scorecard-fixture__first-screen.png"))
            page.locator("details.nad-claim summary").first.click()
            page.screenshot(path=str(shots / "scorecard-fixture__full.png"), full_page=True)
        finally:
            ctx.close()
    assert not problems, "\n- ".join(["scorecard rendered from tests/fixtures/scorecard.json:"] + problems)
    assert "Paper claims reproduced:" in facts["text"]
