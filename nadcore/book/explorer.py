"""Interactive figures that keep working in the static web book (no kernel, no internet).

Two explorers, in the spirit of the original NAD blog post:

:func:`nad_explorer` (chapter 2)
    Pick an architecture and a NAD index; see NAD ``u_i`` in pixel space, its Fourier energy
    ``|F(u_i)|^2`` (paper Fig. 5), its eigenvalue relative to the largest one, ``lambda_i / lambda_0``
    (indices from 0, as on the slider) and, when given, the test accuracy on ``D(u_i)`` (Fig. 6).
:func:`direction_explorer` (chapter 3)
    The accuracy heatmap over a grid of Fourier directions (paper Figs. 1 and 3), one per
    architecture; hovering over, clicking or focusing a cell shows that direction ``v`` and the
    accuracy on ``D(v)``.

Without a kernel: every picture is a small precomputed PNG (about 1 kB for a 32x32 NAD) shipped
inside the output; the browser only switches between them.

* ``backend="widgets"`` (the default for :func:`nad_explorer`) builds ipywidgets linked on the
  client side only: a ``Dropdown`` (architecture) and a ``SelectionSlider`` (NAD index) are
  ``jslink``-ed to the ``selected_index`` of nested ``Stack`` containers whose pages are ``HTML``
  widgets holding the precomputed images. No Python callback is involved, so the widget state
  that papermill stores lets the book's local widget manager run the explorer in static HTML.
* ``backend="html"`` emits one self-contained HTML fragment (inline ``<script>`` from
  ``nadcore/book/static/``, images as ``data:`` URIs, no external request) with the same controls,
  for places where widget state is not kept. :func:`direction_explorer` always uses this form:
  hovering cannot be expressed with ``jslink``.
"""

from __future__ import annotations

import base64
import html as _html
import io
import json
import math
from pathlib import Path
from typing import Mapping

import numpy as np

from nadcore.data.directions import fourier_basis_vector, fourier_energy
from nadcore.runtime import digest

__all__ = ["nad_explorer", "direction_explorer", "default_indices", "png_bytes", "png_data_uri", "HTMLExplorer"]

#: pixel size at which the 32x32 images are drawn (nearest-neighbour upscaling in the browser)
DISPLAY_PX = 160
#: colours per image: 32 levels make a 32x32 NAD about 0.8 kB and look the same as 256 at this size
LEVELS = 32


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------
def _palette(cmap: str, levels: int) -> list[int]:
    import matplotlib

    rgba = matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, levels))
    return (np.round(rgba[:, :3] * 255).astype(np.uint8)).ravel().tolist()


def png_bytes(
    values: np.ndarray, cmap: str = "viridis", vmin: float | None = None, vmax: float | None = None, levels: int = 64
) -> bytes:
    """A 2-D array as a palette PNG of ``levels`` colours of ``cmap`` (NaN -> the lowest colour).
    64 levels halve the size of a 32x32 image against 256 and look the same at this size.

    A 3-D array (3, H, W) or (H, W, 3) with values in [0, 1] is written as an RGB PNG instead."""
    from PIL import Image

    a = np.asarray(values, dtype=np.float64)
    buf = io.BytesIO()
    if a.ndim == 3:
        if a.shape[0] == 3 and a.shape[-1] != 3:
            a = np.moveaxis(a, 0, -1)
        rgb = np.round(np.clip(np.nan_to_num(a), 0, 1) * 255).astype(np.uint8)
        Image.fromarray(rgb, mode="RGB").save(buf, format="PNG", optimize=True)
        return buf.getvalue()
    if a.ndim != 2:
        raise ValueError(f"expected a 2-D image, got shape {a.shape}")
    finite = a[np.isfinite(a)]
    lo = float(finite.min()) if vmin is None and finite.size else float(vmin or 0.0)
    hi = float(finite.max()) if vmax is None and finite.size else float(vmax if vmax is not None else 1.0)
    if not 2 <= levels <= 256:
        raise ValueError(f"levels must be in 2..256, got {levels}")
    scale = (levels - 1) / (hi - lo) if hi > lo else 0.0
    idx = np.clip(np.round((np.nan_to_num(a, nan=lo) - lo) * scale), 0, levels - 1).astype(np.uint8)
    img = Image.fromarray(idx, mode="L").convert("P")
    img.putpalette(_palette(cmap, levels))
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def png_data_uri(values: np.ndarray, **kw) -> str:
    """``data:image/png;base64,...`` of :func:`png_bytes`."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(values, **kw)).decode("ascii")


def _as_image(vec: np.ndarray, shape) -> np.ndarray:
    """A flat vector reshaped to (H, W) or (C, H, W) (``shape`` may be None: square, 1 channel)."""
    v = np.asarray(vec, dtype=np.float64).reshape(-1)
    if shape is None:
        side = math.isqrt(v.size)
        if side * side != v.size:
            raise ValueError(f"cannot show a vector of length {v.size} as a square image")
        shape = (side, side)
    a = v.reshape(tuple(shape))
    if a.ndim == 3 and a.shape[0] == 1:
        a = a[0]
    return a


def _pixel_image(img: np.ndarray) -> dict:
    """PNG arguments for a signed image: diverging BrBG around 0 (one channel) or an RGB view."""
    if img.ndim == 3:
        m = float(np.abs(img).max()) or 1.0
        return dict(values=0.5 + 0.5 * img[:3] / m)
    m = float(np.abs(img).max()) or 1.0
    return dict(values=img, cmap="BrBG", vmin=-m, vmax=m, levels=LEVELS)


def _fourier_image(img: np.ndarray) -> dict:
    return dict(values=fourier_energy(img), cmap="magma", vmin=0.0, levels=LEVELS)


def _img_tag(uri: str, alt: str, px: int = DISPLAY_PX) -> str:
    return (
        f'<img src="{uri}" alt="{_html.escape(alt)}" width="{px}" height="{px}" '
        'style="image-rendering:pixelated;image-rendering:crisp-edges;border:1px solid #ccc">'
    )


# --------------------------------------------------------------------------------------------
# NAD explorer
# --------------------------------------------------------------------------------------------
def default_indices(D: int, n: int = 64, dense: int = 16) -> list[int]:
    """``n`` NAD indices out of ``D``: the first ``dense`` ones, then evenly spread up to D - 1."""
    n = min(n, D)
    dense = min(dense, n)
    rest = np.linspace(dense, D - 1, n - dense).round().astype(int).tolist() if n > dense else []
    return sorted(set(range(dense)) | set(rest))


def _accuracy_lookup(acc) -> dict:
    """``{nad index: accuracy}`` from a mapping, an (indices, values) pair or an array over all
    indices (NaN = not measured)."""
    if acc is None:
        return {}
    if isinstance(acc, Mapping):
        return {int(k): float(v) for k, v in acc.items()}
    if isinstance(acc, tuple) and len(acc) == 2:
        return {int(k): float(v) for k, v in zip(*acc)}
    arr = np.asarray(acc, dtype=float).reshape(-1)
    return {i: float(v) for i, v in enumerate(arr) if np.isfinite(v)}


def _nad_entries(results: Mapping, indices, accuracies) -> tuple[list[str], list[int], dict]:
    """Labels, indices and {label: [(pixel uri, fourier uri, info text), ...]}."""
    if not results:
        raise ValueError("nad_explorer: `results` is empty; pass {label: NADResult}")
    labels = [str(k) for k in results]
    counts = [np.shape(r.nads if hasattr(r, "nads") else r)[0] for r in results.values()]
    # e.g. the authors' published NADs hold 1023 of the 1024 directions: offer what all sets have
    indices = default_indices(min(counts)) if indices is None else [int(i) for i in indices]
    if not indices:
        raise ValueError("nad_explorer: no NAD index to show")
    if any(i < 0 for i in indices):
        raise ValueError(f"nad_explorer: NAD indices must be >= 0, got {[i for i in indices if i < 0]}")
    accuracies = accuracies or {}
    unknown = set(map(str, accuracies)) - set(labels)
    if unknown:
        raise ValueError(f"nad_explorer: accuracies for unknown labels {sorted(unknown)}; labels are {labels}")
    if max(indices) >= max(counts):
        raise ValueError(
            f"nad_explorer: NAD index {max(indices)} is out of range: the sets hold {dict(zip(labels, counts))} NADs"
        )
    entries = {}
    for label, r in zip(labels, results.values()):
        U = np.asarray(r.nads if hasattr(r, "nads") else r)
        ev = np.asarray(r.eigenvalues, dtype=float) if hasattr(r, "eigenvalues") else None
        shape = r.input_shape if hasattr(r, "input_shape") else None
        acc = _accuracy_lookup(accuracies.get(label))
        rows = []
        for i in indices:
            if i >= U.shape[0]:  # a shorter set (explicit indices only): say so in the panel
                rows.append(
                    (
                        None,
                        None,
                        f"<b>{_html.escape(label)}</b>: NAD {i} not available (this set holds {U.shape[0]} NADs)",
                    )
                )
                continue
            img = _as_image(U[i], shape)
            info = [f"<b>{_html.escape(label)}</b>, NAD {i}"]
            if ev is not None and ev.size and ev[0] > 0:
                info.append(f"eigenvalue \u03bb<sub>{i}</sub>/\u03bb<sub>0</sub> = {ev[i] / ev[0]:.3g}")
            if acc:
                a = acc.get(i)
                info.append(
                    f"test accuracy on D(u<sub>{i}</sub>): " + (f"{a:.1%}" if a is not None else "not measured")
                )
            rows.append((png_data_uri(**_pixel_image(img)), png_data_uri(**_fourier_image(img)), "<br>".join(info)))
        entries[label] = rows
    return labels, indices, entries


def _static(name: str) -> str:
    """A file of nadcore/book/static/ (the explorers' CSS and scripts)."""
    return (Path(__file__).resolve().parent / "static" / name).read_text(encoding="utf-8")


def _css() -> str:
    """The explorers' styles, shipped once per explorer (the pages only carry class names)."""
    return f"<style>\n{_static('explorer.css')}</style>"


def _script(name: str, root_id: str) -> str:
    return f"<script>\n{_static(name).replace('__ROOT_ID__', root_id)}</script>"


def _nad_panel(label: str, i: int, pix: str | None, fou: str | None, info: str) -> str:
    if pix is None:
        return f'<div class="nadx-panel"><div class="nad-explorer-info">{info}</div></div>'
    return (
        f'<div class="nadx-panel"><figure><img class="nadx-img" src="{pix}" '
        f'alt="NAD {i} of {_html.escape(label)} in pixel space"><figcaption>pixel space</figcaption>'
        f'</figure><figure><img class="nadx-img" src="{fou}" alt="Fourier energy of NAD {i} of '
        f'{_html.escape(label)}"><figcaption>Fourier energy</figcaption></figure>'
        f'<div class="nad-explorer-info">{info}</div></div>'
    )


def nad_explorer(results: Mapping, indices=None, accuracies: Mapping | None = None, *, backend: str = "widgets"):
    """Browse the NADs of several architectures (paper Fig. 5, interactively).

    ``results``: label -> :class:`~nadcore.nads.NADResult` (or an array of NADs, one per row).
    ``indices``: the NAD indices offered by the slider (default :func:`default_indices`: 0..15,
    then 48 indices spread up to D - 1; every index costs about 2 kB of page per architecture).
    ``accuracies``: optional label -> accuracies on ``D(u_i)``, as {index: accuracy}, an
    ``(indices, accuracies)`` pair or an array over all indices (chapter 3 measures them).
    ``backend``: ``"widgets"`` (ipywidgets linked client-side, see the module docstring) or
    ``"html"`` (a self-contained HTML/JS fragment).

    Returns an object that displays itself in Jupyter and in the static book.
    """
    labels, indices, entries = _nad_entries(results, indices, accuracies)
    if backend == "widgets":
        return _nad_widgets(labels, indices, entries)
    if backend == "html":
        return _nad_html(labels, indices, entries)
    raise ValueError(f"backend must be 'widgets' or 'html', got {backend!r}")


def _explorer_class():
    import ipywidgets as W

    class NADExplorer(W.VBox):
        """The NAD explorer: a VBox of client-side linked widgets (short repr on purpose: the
        default one would print every embedded image)."""

        def __repr__(self):
            return f"NADExplorer({self._summary})"

    return NADExplorer


def _nad_widgets(labels, indices, entries):
    import ipywidgets as W

    cls = _explorer_class()
    layout = W.Layout()  # one Layout / style model shared by every page keeps the state small
    from ipywidgets.widgets.widget_string import HTMLStyle

    style = HTMLStyle()
    # No `description` on the controls: the widget manager typesets descriptions with the
    # MathJax 2 API (MathJax.Hub), which throws under the book's MathJax 3; plain HTML labels.
    label = lambda text: W.HTML(f"<b>{text}</b>", layout=W.Layout(width="7.5em"))  # noqa: E731
    arch = W.Dropdown(options=labels, index=0, layout=W.Layout(width="max-content"))
    slider = W.SelectionSlider(
        options=[(str(i), i) for i in indices], index=0, continuous_update=True, layout=W.Layout(width="360px")
    )
    pages = W.Stack(
        [
            W.Stack(
                [W.HTML(_nad_panel(lab, i, *row), layout=layout, style=style) for i, row in zip(indices, entries[lab])],
                selected_index=0,
            )
            for lab in labels
        ],
        selected_index=0,
    )
    links = [W.jslink((arch, "index"), (pages, "selected_index"))]
    links += [W.jslink((slider, "index"), (inner, "selected_index")) for inner in pages.children]
    note = W.HTML(
        _css() + '<span style="font-size:85%">Fourier energy: low frequencies at the '
        "centre. Eigenvalues relative to the largest one.</span>"
    )
    controls = W.VBox(
        [
            W.HBox([label("architecture"), arch], layout=W.Layout(align_items="center")),
            W.HBox([label("NAD index"), slider], layout=W.Layout(align_items="center")),
        ]
    )
    box = cls([controls, pages, note])
    box.add_class("nad-explorer")
    box._summary = f"{len(labels)} architecture(s) x {len(indices)} NAD indices"
    box._links = links  # keep the Link widgets alive with the explorer
    return box


class HTMLExplorer:
    """A self-contained HTML fragment (inline script, data-URI images) that displays itself."""

    def __init__(self, html: str, summary: str):
        self.html = html
        self.summary = summary

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<{self.summary}>"

    def save(self, path) -> None:
        """Write a stand-alone HTML page holding the fragment."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(
                f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{self.summary}"
                f"</title></head><body>{self.html}</body></html>\n"
            )


def _uid(kind: str, payload) -> str:
    return f"{kind}-" + digest(payload, 10)


def _nad_html(labels, indices, entries) -> HTMLExplorer:
    data = {lab: [[p, f, info] for p, f, info in rows] for lab, rows in entries.items()}
    uid = _uid("nadx", [labels, indices, [[r[2] for r in v] for v in data.values()]])
    options = "".join(f'<option value="{k}">{_html.escape(lab)}</option>' for k, lab in enumerate(labels))
    # the first panel, drawn with a NAD that exists (the script swaps images and text)
    first = next((r for r in entries[labels[0]] if r[0] is not None), None)
    if first is None:
        first = next(r for rows in entries.values() for r in rows if r[0] is not None)
    html = f"""<div id="{uid}" class="nad-explorer nad-explorer-html" style="font-family:sans-serif">
<div style="display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin-bottom:8px">
<label>architecture <select class="nadx-arch">{options}</select></label>
<label>NAD index <input class="nadx-slider" type="range" min="0" max="{len(indices) - 1}" value="0"
 step="1" style="width:300px;vertical-align:middle"></label>
<output class="nadx-index">{indices[0]}</output>
<button type="button" class="nadx-prev">&#9664;</button><button type="button" class="nadx-next">&#9654;</button>
</div>
{_css()}<div class="nadx-holder">{_nad_panel(labels[0], indices[0], *first)}</div>
<script type="application/json" class="nadx-data">{_json_for_script({"labels": labels, "indices": indices, "data": data})}</script>
{_script("nad_explorer.js", uid)}
</div>"""
    return HTMLExplorer(html, f"NAD explorer: {len(labels)} architecture(s) x {len(indices)} NAD indices")


def _json_for_script(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


# --------------------------------------------------------------------------------------------
# Direction explorer
# --------------------------------------------------------------------------------------------
def _direction_images(directions, shape):
    """(list of g*g direction images (H, W) or (C, H, W), list of labels or None)."""
    g0, g1 = shape
    if hasattr(directions, "frequencies") and hasattr(directions, "size"):  # a FourierGrid
        grid = directions
        if tuple(grid.shape) != (g0, g1):
            raise ValueError(f"direction_explorer: the grid is {grid.shape} but the accuracy maps are {shape}")
        imgs = [fourier_basis_vector(a, b, grid.size).numpy()[0] for a, b in grid.frequencies]
        return imgs, [f"(k1, k2) = ({a}, {b})" for a, b in grid.frequencies]
    arr = directions.detach().cpu().numpy() if hasattr(directions, "detach") else np.asarray(directions)
    if arr.shape[:2] == (g0, g1) and arr.ndim >= 3:
        arr = arr.reshape(g0 * g1, *arr.shape[2:])
    if arr.shape[0] != g0 * g1:
        raise ValueError(
            f"direction_explorer: expected {g0 * g1} directions (one per cell of the "
            f"{g0}x{g1} maps, row-major) or a FourierGrid, got an array of shape {arr.shape}"
        )
    imgs = []
    for v in arr:
        v = np.asarray(v, dtype=np.float64)
        if v.ndim == 1:
            v = _as_image(v, None)
        if v.ndim == 3 and v.shape[0] == 1:
            v = v[0]
        imgs.append(v)
    return imgs, None


def direction_explorer(
    grid_accuracies: Mapping,
    directions,
    *,
    vmin: float = 0.5,
    vmax: float = 1.0,
    cmap: str = "viridis",
    cell_px: int = 18,
    labels=None,
    title: str | None = None,
) -> HTMLExplorer:
    """Accuracy over a grid of Fourier directions, one heatmap per architecture (paper Fig. 1):
    hovering over, clicking or tabbing to a cell shows the direction ``v`` and the test accuracy
    on ``D(v)`` for every architecture.

    ``grid_accuracies``: arch -> (g, g) array of accuracies (NaN = not measured; all the same
    shape). ``directions``: a :class:`nadcore.data.FourierGrid` of that shape (the directions are
    then its Fourier basis vectors, labelled by frequency), or an array of the g*g directions in
    row-major order ((g*g, ...) or (g, g, ...), each a D-vector or an image). ``labels``: optional
    row-major cell labels. Returns a self-contained HTML fragment (no kernel needed).
    """
    if not grid_accuracies:
        raise ValueError("direction_explorer: `grid_accuracies` is empty")
    archs = [str(a) for a in grid_accuracies]
    maps = [np.asarray(m, dtype=float) for m in grid_accuracies.values()]
    shape = maps[0].shape
    if len(shape) != 2 or any(m.shape != shape for m in maps):
        raise ValueError(
            "direction_explorer: every accuracy map must be 2-D with the same shape, got "
            + ", ".join(f"{a}: {m.shape}" for a, m in zip(archs, maps))
        )
    imgs, cell_labels = _direction_images(directions, shape)
    if labels is not None:
        cell_labels = [str(x) for x in labels]
        if len(cell_labels) != len(imgs):
            raise ValueError(f"direction_explorer: {len(cell_labels)} labels for {len(imgs)} cells")
    if cell_labels is None:
        cell_labels = [f"cell ({i}, {j})" for i in range(shape[0]) for j in range(shape[1])]
    import matplotlib
    import matplotlib.colors as mcolors

    cm = matplotlib.colormaps[cmap]
    norm = mcolors.Normalize(vmin=vmin, vmax=vmax, clip=True)
    dir_uris = [png_data_uri(**_pixel_image(v)) for v in imgs]
    fou_uris = [png_data_uri(**_fourier_image(v)) for v in imgs]
    acc = [[None if not np.isfinite(x) else round(float(x), 4) for x in m.ravel()] for m in maps]
    uid = _uid("dirx", [archs, acc, cell_labels])

    def colour(x):
        return "#eeeeee" if x is None else mcolors.to_hex(cm(norm(x)))

    def textcol(x):
        return "#000" if x is None or norm(x) > 0.6 else "#fff"

    tables = []
    for a, (arch, m) in enumerate(zip(archs, acc)):
        rows = []
        for i in range(shape[0]):
            cells = []
            for j in range(shape[1]):
                c = i * shape[1] + j
                x = m[c]
                tip = f"{arch}, {cell_labels[c]}: " + ("not measured" if x is None else f"{x:.1%}")
                cells.append(
                    f'<td class="dirx-cell" tabindex="0" data-a="{a}" data-c="{c}" title="{_html.escape(tip)}" '
                    f'style="width:{cell_px}px;height:{cell_px}px;background:{colour(x)}"></td>'
                )
            rows.append("<tr>" + "".join(cells) + "</tr>")
        tables.append(
            f'<div style="text-align:center"><div style="font-size:85%;margin-bottom:2px">'
            f'{_html.escape(arch)}</div><table class="dirx-map">{"".join(rows)}</table></div>'
        )
    stops = ", ".join(f"{mcolors.to_hex(cm(t))} {100 * t:.0f}%" for t in np.linspace(0, 1, 6))
    bar = (
        f'<div style="font-size:80%;margin-top:4px">accuracy {vmin:.0%} '
        f'<span style="display:inline-block;width:140px;height:10px;vertical-align:middle;'
        f'background:linear-gradient(to right, {stops})"></span> {vmax:.0%}'
        f'<span style="margin-left:10px">(grey: not measured)</span></div>'
    )
    first = next((c for c in range(len(imgs)) if any(m[c] is not None for m in acc)), 0)
    payload = {"archs": archs, "acc": acc, "labels": cell_labels, "dir": dir_uris, "fou": fou_uris, "first": first}
    heading = f'<div style="font-weight:bold;margin-bottom:4px">{_html.escape(title)}</div>' if title else ""
    html = f"""<div id="{uid}" class="direction-explorer" style="font-family:sans-serif">{heading}{_css()}
<div style="display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start">
{"".join(tables)}
<div class="dirx-detail" style="display:flex;gap:10px;align-items:flex-start">
<figure style="margin:0;text-align:center">{_img_tag(dir_uris[first], "direction v", 128)}<figcaption style="font-size:80%">direction v</figcaption></figure>
<figure style="margin:0;text-align:center">{_img_tag(fou_uris[first], "Fourier energy of v", 128)}<figcaption style="font-size:80%">Fourier energy</figcaption></figure>
<div class="dirx-info" style="font-size:90%;line-height:1.6;min-width:12em"></div>
</div></div>{bar}
<script type="application/json" class="dirx-data">{_json_for_script(payload)}</script>
{_script("direction_explorer.js", uid)}
</div>"""
    return HTMLExplorer(html, f"direction explorer: {len(archs)} architecture(s), {shape[0]}x{shape[1]} grid")
