"""nadcore.book.explorer: the interactive figures are self-contained and linked client-side only.

What the browser does with them is tested in tests/test_browser.py; here: structure, sizes, links,
the embedded images, and the errors.
"""

from __future__ import annotations

import base64
import io
import json
import re

import ipywidgets as W  # noqa: E402  (the book extra)
import numpy as np
import pytest

from nadcore.book import explorer as explorer
from nadcore.data import fourier_grid
from nadcore.nads import NADResult


def _result(seed: int, D: int = 64, n: int | None = None) -> NADResult:
    """Orthonormal 'NADs' of 8x8 images (n of them, default D) and decreasing eigenvalues."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    n = D if n is None else n
    return NADResult(np.linspace(2.0, 0.1, n), Q.T[:n].copy(), {"input_shape": [1, 8, 8]})


@pytest.fixture(scope="module")
def results():
    return {"lenet": _result(0), "resnet18": _result(1)}


def _png(uri: str):
    from PIL import Image

    assert uri.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


def test_default_indices():
    idx = explorer.default_indices(1024)
    assert len(idx) == 64 and idx[:16] == list(range(16)) and idx[-1] == 1023
    assert idx == sorted(set(idx))
    assert explorer.default_indices(10) == list(range(10))
    assert explorer.default_indices(1023)[-1] == 1022


def test_png_is_small_and_exact_size():
    img = np.random.default_rng(0).standard_normal((32, 32))
    b = explorer.png_bytes(img, cmap="BrBG", vmin=-3, vmax=3, levels=32)
    assert b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) < 1200
    assert _png(explorer.png_data_uri(img)).size == (32, 32)
    rgb = explorer.png_bytes(np.random.default_rng(1).random((3, 8, 8)))
    from PIL import Image

    assert Image.open(io.BytesIO(rgb)).mode == "RGB"


def test_widget_explorer_is_linked_client_side(results):
    w = explorer.nad_explorer(results, indices=[0, 1, 5, 63], accuracies={"lenet": {0: 0.99, 5: 0.5}})
    assert isinstance(w, W.VBox) and "nad-explorer" in w._dom_classes
    assert repr(w) == "NADExplorer(2 architecture(s) x 4 NAD indices)"  # short, no images
    controls, pages, note = w.children
    arch = controls.children[0].children[1]
    slider = controls.children[1].children[1]
    assert isinstance(arch, W.Dropdown) and list(arch.options) == ["lenet", "resnet18"]
    assert isinstance(slider, W.SelectionSlider) and list(slider._options_labels) == ["0", "1", "5", "63"]
    assert isinstance(pages, W.Stack) and len(pages.children) == 2
    assert all(isinstance(s, W.Stack) and len(s.children) == 4 for s in pages.children)
    # links are jslink (browser side), one for the architecture and one per architecture's stack
    links = w._links
    assert all(type(l).__name__ == "Link" and l._model_name == "LinkModel" for l in links) and len(links) == 3
    ends = {(l.source[0].model_id, l.source[1], l.target[0].model_id, l.target[1]) for l in links}
    assert (arch.model_id, "index", pages.model_id, "selected_index") in ends
    for inner in pages.children:
        assert (slider.model_id, "index", inner.model_id, "selected_index") in ends
    # every page shows pixel + Fourier images and the eigenvalue / accuracy text
    page = pages.children[0].children[2].value  # lenet, NAD 5
    uris = re.findall(r'src="(data:image/png;base64,[^"]+)"', page)
    assert len(uris) == 2 and all(_png(u).size == (8, 8) for u in uris)
    ev = results["lenet"].eigenvalues
    assert "NAD 5" in page and f"= {ev[5] / ev[0]:.3g}" in page and "50.0%" in page
    assert "not measured" in pages.children[0].children[1].value
    assert "accuracy" not in pages.children[1].children[0].value  # no accuracies for resnet18
    # no description on the controls (the widget manager would call MathJax 2's API on it)
    assert not arch.description and not slider.description
    # no TeX that MathJax would have to typeset inside the widget
    assert "$" not in page and "\\(" not in page


def test_widget_state_stays_small(results):
    """A page of the chapter carries every panel: about 2 kB each for 32x32 NADs."""
    big = {"a": _result(2, D=1024, n=1024)}
    big["a"].meta["input_shape"] = [1, 32, 32]
    w = explorer.nad_explorer(big)
    pages = w.children[1].children[0].children
    assert len(pages) == 64
    size = sum(len(p.value) for p in pages) / len(pages)
    assert size < 3000, f"{size:.0f} bytes per panel"


def test_html_backend_is_self_contained(results):
    h = explorer.nad_explorer(results, indices=[0, 3], backend="html")
    html = h._repr_html_()
    assert 'class="nad-explorer' in html and "<script>" in html
    assert not re.search(r'(src|href)="(https?:)?//', html), "no external resource"
    data = json.loads(
        re.search(r'<script type="application/json" class="nadx-data">(.*?)</script>', html, re.S).group(1)
    )
    assert data["labels"] == ["lenet", "resnet18"] and data["indices"] == [0, 3]
    assert len(data["data"]["resnet18"]) == 2 and _png(data["data"]["resnet18"][1][0]).size == (8, 8)
    assert repr(h).startswith("<NAD explorer")


def test_mixed_lengths_and_errors(results):
    short = {"ours": _result(3), "published": _result(4, n=63)}
    w = explorer.nad_explorer(short)  # default indices stop at what every set holds
    assert w.children[0].children[1].children[1]._options_labels[-1] == "62"
    w = explorer.nad_explorer(short, indices=[0, 63])
    assert "not available" in w.children[1].children[1].children[1].value
    with pytest.raises(ValueError, match="empty"):
        explorer.nad_explorer({})
    with pytest.raises(ValueError, match="out of range"):
        explorer.nad_explorer(results, indices=[64])
    with pytest.raises(ValueError, match="unknown labels"):
        explorer.nad_explorer(results, accuracies={"vgg": {0: 1.0}})
    with pytest.raises(ValueError, match="backend"):
        explorer.nad_explorer(results, backend="svg")


def test_accuracy_formats():
    assert explorer._accuracy_lookup(([1, 4], [0.5, 0.75])) == {1: 0.5, 4: 0.75}
    assert explorer._accuracy_lookup(np.array([0.9, np.nan, 0.7])) == {0: 0.9, 2: 0.7}
    assert explorer._accuracy_lookup({2: 0.6}) == {2: 0.6}


def test_direction_explorer_with_fourier_grid():
    grid = fourier_grid(size=8, grid=4)
    acc = {"logreg": np.full((4, 4), 0.97), "lenet": np.linspace(0.5, 1, 16).reshape(4, 4)}
    acc["lenet"][0, 0] = np.nan
    h = explorer.direction_explorer(acc, grid, title="Fig. 1")
    html = h._repr_html_()
    assert html.count('class="dirx-cell"') == 32 and "Fig. 1" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    data = json.loads(re.search(r'class="dirx-data">(.*?)</script>', html, re.S).group(1))
    assert data["archs"] == ["logreg", "lenet"] and data["acc"][1][0] is None
    assert data["labels"][5] == f"(k1, k2) = ({grid.k1[1, 1]}, {grid.k2[1, 1]})"
    assert len(data["dir"]) == 16 and _png(data["dir"][0]).size == (8, 8)
    assert "not measured" in html  # the NaN cell's tooltip


def test_direction_explorer_with_arrays_and_errors():
    dirs = np.random.default_rng(0).standard_normal((2, 3, 16))  # (g0, g1, D) with 4x4 images
    h = explorer.direction_explorer({"m": np.zeros((2, 3))}, dirs, labels=list("abcdef"))
    assert h._repr_html_().count('class="dirx-cell"') == 6
    with pytest.raises(ValueError, match="same shape"):
        explorer.direction_explorer({"a": np.zeros((2, 2)), "b": np.zeros((3, 3))}, dirs)
    with pytest.raises(ValueError, match="expected 4 directions"):
        explorer.direction_explorer({"a": np.zeros((2, 2))}, dirs)
    with pytest.raises(ValueError, match="grid is"):
        explorer.direction_explorer({"a": np.zeros((2, 2))}, fourier_grid(8, 4))
    with pytest.raises(ValueError, match="empty"):
        explorer.direction_explorer({}, dirs)
