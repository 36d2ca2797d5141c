"""The paper-scale panels of the chapters: what ``results/paper`` holds (made on a GPU by
``scripts/run_paper.py``), drawn after the cpu figure, titled with its provenance, with its
claims recorded as ``profile="paper"`` rows (:mod:`nadcore.book.paper_results`).

A chapter calls ``show(ch, "fig1")`` once per figure. Without a bundle it does nothing and costs
one file-existence check; with a bundle that lacks the figure it says so in one line.
"""
from __future__ import annotations

import numpy as np

from nadcore.book import paper_results
from nadcore.data import fourier_grid
from nadcore.plots import separability as plots

__all__ = ["show"]

_NAMES = {"fig1": "Fig. 1", "fig2": "Fig. 2", "fig3": "Fig. 3", "fig6": "Fig. 6", "fig7": "Fig. 7",
          "fig8": "Fig. 8", "us-fig2": "the follow-up's Fig. 2", "us-fig3": "the follow-up's Fig. 3"}


def show(ch, figure: str, root=None):
    """Draw ``figure``'s paper-scale panel and record its claims on ``ch`` when the bundle has it;
    returns the matplotlib figure (None when nothing is drawn)."""
    bundle = paper_results.load_bundle(root)
    if bundle is None:
        return None
    frame = bundle.frame(figure)
    if frame is None:
        print(f"{_NAMES.get(figure, figure)}: not yet run at paper scale.")
        return None
    title = bundle.title(figure)
    fig = None
    if figure in ("fig1", "fig3"):
        grid = fourier_grid(32, 16)
        fig = plots.direction_heatmaps(paper_results.fig1_maps(frame, grid), grid,
                                       title=f"{_NAMES[figure]} at the paper's scale: test accuracy on D(v) "
                                             f"(a cell's transpose (k2, k1) drawn from it)\n{title}")
    elif figure == "fig2":
        grid = fourier_grid(32, 16)
        its = frame.assign(iters=np.where(frame["iters_to_loss"] >= 0, frame["iters_to_loss"], frame["budget"]))
        fig = plots.direction_heatmaps(paper_results.fig1_maps(its, grid, "iters"), grid, vmin=0,
                                       vmax=float(frame["budget"].max()), cmap="magma_r",
                                       label="iterations to a small loss",
                                       title=f"Fig. 2 at the paper's scale (censored = budget)\n{title}")
    elif figure == "fig6":
        panels = {"paper scale (our secant NADs)": {
            f"{m}": (g.groupby("nad_index")["test_acc"].mean().index.to_numpy(),
                     g.groupby(["seed", "nad_index"])["test_acc"].mean().unstack().to_numpy())
            for m, g in frame[frame["estimator"] == "secant"].groupby("model", sort=False)}}
        fig = plots.accuracy_vs_index(panels, title=f"Fig. 6 at the paper's scale\n{title}")
    paper_results.record_claims(ch, figure, frame, bundle)
    return fig
