# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Linear separability and NADs
#
# A linearly separable problem with a single discriminative direction is about the easiest task
# a classifier can face: logistic regression solves it for any direction. Ortiz-Jimenez et al.
# {cite:p}`ortizjimenez2020nads` (Sec. 2) observed that deep convolutional networks do not:
# whether they generalise depends on *where* the discriminative direction points. This chapter
# repeats that observation (the paper's Figs. 1-3) and then tests the paper's explanation
# (Sec. 4.1, Fig. 6): the neural anisotropy directions of chapter 2 rank the directions from easy
# to hard to learn.
#
# ## The family $\mathcal{D}(v)$
#
# For a unit vector $v \in \mathbb{S}^{D-1}$, the paper defines a sample $(x, y) \sim \mathcal{D}(v)$
# as
#
# $$ x = \epsilon\, y\, v + w, \qquad y \sim \mathcal{U}\{-1, +1\}, \qquad
#    w \sim \mathcal{N}\!\left(0, \sigma^2 (I_D - v v^\top)\right). $$
#
# The noise has no component along $v$, so $\operatorname{sign}(v^\top x) = y$ always: the
# classes are separated along $v$ and nowhere else. With $\sigma = 3$ and $\epsilon = 1$ the noise
# carries almost all of the energy of every sample ($\sigma^2 (D-1) \approx 9{,}200$ against
# $\epsilon^2 = 1$), so a learner has to *find* the one informative direction among 1,024 from a
# finite sample. If the architecture's inductive bias points the right way it will; otherwise it
# fits the noise of the training set and does not generalise.
#
# The authors' released code draws the data a little differently from this formula: it balances
# the classes exactly and puts a signal of $\pm(\epsilon/2)\, v$ in each sample, half the margin.
# Which of the two made the published figures? We decided by training LeNet both ways on a few
# cells and comparing with the authors' published Fig. 1 data (shipped with `nadcore`:
# `nadcore.nads.published.load_published_fig1`): the formula gave the published accuracies, the half
# margin did not. The book therefore defaults to the formula (`signal="paper"`) and keeps the code's
# convention as a knob
# (`signal="authors"`). This build measures the comparison again: the contrast table under Fig. 1
# and the claim `fig1-matches-published`. Training and test sets
# are independent draws of the sizes asked for (in the original code the test set silently had the
# training set's size). This is the generator:
#
# ```{literalinclude} ../../nadcore/data/directions.py
# :pyobject: directional_dataset
# ```
#
# ## Fourier directions
#
# To probe many directions systematically the paper uses the 2D discrete Fourier basis of a
# $32 \times 32$ single-channel image. Each complex DFT basis vector
# $e^{-i\theta}$, $\theta_{mn} = 2\pi(k_1 m + k_2 n)/32$, gives one real direction
# $\cos\theta + \sin\theta$ (its real part minus its imaginary part, normalised): over all 1,024
# frequencies these real vectors form an orthonormal basis, one direction per DFT coefficient.
# As in the paper's Fig. 1, we lay out a $16 \times 16$ grid of frequencies
# $(k_1, k_2) \in \{-16, -14, \dots, 14\}^2$ with the constant direction at the centre and the
# highest frequencies at the corners (`nadcore.data.fourier_grid`). The claims below compare
# *low* frequencies, $\max(|k_1|, |k_2|) \le 4$, with *high* ones, $\max(|k_1|, |k_2|) \ge 8$.

# %% tags=["parameters"]
profile = "cpu"          # "smoke" (tests), "cpu" (laptop, minutes), "paper" (the papers' scale)
seed = 0                 # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"          # "auto", "cpu" or "cuda"
model = "lenet"          # a registry name or "package.module:factory"
knobs = None             # settings to override, e.g. {"fig1_every": 4} (a dict or JSON)

# %%
import numpy as np
import pandas as pd

from nadcore import book
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability import quantities as q
from nadcore.book import setup
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.book.evidence import accuracy_interval, fisher_interval
from nadcore.book.explorer import direction_explorer
from nadcore.chapters.linear_separability import figures as plots

ch = setup("03_linear_separability", profile=profile, seed=seed, device=device, knobs=knobs, model=model)
cfg = ch.cfg
grid = fourier_grid(32, cfg["grid"])
LOW, HIGH = cfg["low"], cfg["high"]
CONVENTION = f"{cfg['signal']}' D(v)".replace("paper'", "paper's") + f", {cfg['outputs']} output(s)"
run = dict(seeds=ch.seeds, chunk=cfg["chunk"], balance=cfg["workers"], executor=ch.executor(),
           cache=ch.cache, device=str(ch.device), outputs=cfg["outputs"])


def settings(arch, paper=False, **over):
    """D(v) and SGD settings of ``arch`` (its own entry, else "default") on this profile, or on
    the paper's (``paper=True``, for the claims' budget fractions)."""
    c = ch.paper_cfg if paper else cfg
    s = c["train"].get(arch, c["train"]["default"])
    return {k: c[k] for k in ("sigma", "epsilon", "signal", "n_test")} | s | over


def budget(arch, train_key=None):
    """SGD steps of one run here and in the paper (the claims' ``steps`` and ``paper_steps``),
    with the training overrides of setting ``train_key`` (e.g. "fig2_train") where given."""
    here, there = (cfg[train_key], ch.paper_cfg[train_key]) if train_key else ({}, {})
    return dict(steps=sep.steps_per_run(settings(arch, **here)),
                paper_steps=sep.steps_per_run(settings(arch, paper=True, **there)))


def with_model(names):
    """The profile's list of architectures with "lenet" replaced by the chapter's ``model``."""
    return list(dict.fromkeys(model if m == "lenet" else m for m in names))


def seed_mean(a):
    return np.asarray(a, dtype=float).mean(0)


# %%
fig = plots.direction_images({f"$k=({a},{b})$": fourier_basis_vector(a, b) for a, b in
                              [(0, 2), (2, 0), (4, 4), (0, 14), (-16, 6), (-16, -16)]},
                             title="Six Fourier directions in pixel space")

# %% [markdown]
# ## Training
#
# Every network is trained as in the authors' code: two outputs and the cross-entropy loss,
# plain SGD on mini-batches of 128, a learning rate that decays linearly from its maximum to zero
# over all iterations (updated every batch), and the global gradient norm clipped to 0.5 before
# every step. For LeNet the maximum learning rate is 0.5 without momentum or weight decay, on
# 10,000 training samples for 20 epochs: 1,580 SGD steps (the same for logistic regression and
# the no-pooling LeNet). (The setting `outputs=1` trains one logit with the logistic loss
# instead.) The paper does not give the recipe of the larger networks in the main text; on the
# `paper` profile they use the follow-up paper's ResNet-18 recipe (maximum learning rate 0.1,
# momentum 0.9, weight decay $10^{-5}$, 30 epochs).
#
# Each number a claim uses comes from `seeds` independent runs per direction (three on the `cpu`
# and `paper` profiles): each seed draws its own training and test sets, initialisation and batch
# order. On the `cpu` profile LeNet and logistic regression keep the paper's full budget; what
# gives is the grid: every second frequency of the paper's $16 \times 16$ map for Fig. 1, and a
# few cells of it for Figs. 2 and 3. The table gives the SGD steps per run and their fraction of
# the paper's. Runs are grouped into jobs of `chunk` networks trained together
# (`nadcore.train.train_many`, the same results as one network at a time) and the jobs run through
# the book's one job runner (`nadcore.experiments.run_jobs`: cached, resumable, here on `workers`
# one-thread processes).
#
# One symmetry halves Fig. 1. Transposing an image maps the Fourier direction $v(k_1, k_2)$ to
# $v(k_2, k_1)$, and it maps every LeNet (or logistic regression) to another one exactly as likely
# under the random initialisation (square kernels and pooling windows, i.i.d. weights). So the
# runs on $\mathcal{D}(v(k_2, k_1))$ have the same distribution as those on
# $\mathcal{D}(v(k_1, k_2))$, and with `fig1_transpose` we train only the cells with
# $k_1 \le k_2$ and mirror them (`nadcore.chapters.linear_separability.runs.grid_sweep`). Note that
# $(k_1, k_2) \to (-k_1, -k_2)$ is *not* such a symmetry here: with the real directions
# $\cos\theta + \sin\theta$ the two cells are orthogonal directions, not $v$ and $-v$. The
# published maps, trained cell by cell, bear the transposition out (printed below).

# %% tags=["nbval-check-output"]
table = pd.DataFrame.from_dict({a: settings(a) for a in dict.fromkeys(
    with_model(cfg["fig1_models"]) + cfg["fig3_models"])}, orient="index")
table["SGD steps"] = [sep.steps_per_run(settings(a)) for a in table.index]
table["of paper's"] = [f"{b['steps'] / b['paper_steps']:.2f}" for b in map(budget, table.index)]
print(table.drop(columns=["momentum", "weight_decay", "batch_size"]).to_string())

# %% [markdown]
# ## Fig. 1: accuracy over the Fourier grid
#
# One dataset $\mathcal{D}(v)$ per grid cell and seed, one freshly initialised network per
# dataset. The maps show the test accuracy averaged over the seeds ($\sigma = 3$,
# $\epsilon = 1$), next to the authors' published map on the same cells and to what chapter 1's
# theory predicts for LeNet's two $2 \times 2$ poolings (Theorem 1 for two stacked average
# poolings: the Bayes accuracy after pooling, `q.pooling_bayes_map`).

# %%
grid1 = grid.subgrid(cfg["fig1_every"]) if cfg["fig1_every"] > 1 else grid
fig1 = {arch: sep.grid_sweep(arch, grid1, settings(arch), transpose_symmetric=cfg["fig1_transpose"], **run)
        for arch in with_model(cfg["fig1_models"])}
published1 = {a: q.published_fig1_map(a, grid1).reshape(grid1.shape) for a in fig1 if a in ("lenet", "logreg")}
theory1 = q.pooling_bayes_map(grid1, epsilon=cfg["epsilon"], sigma=cfg["sigma"]).reshape(grid1.shape)
fig = plots.direction_heatmaps({a: seed_mean(r["test_acc"]) for a, r in fig1.items()}
                               | {f"{a}, published": m for a, m in published1.items()}
                               | {"theory: 2 average pools": theory1}, grid1,
                               title=f"Fig. 1: test accuracy on D(v), v a Fourier direction\n"
                                     f"(mean of {len(ch.seeds)} seeds; {CONVENTION}; {profile} profile)")
fig1_data = q.fourier_table(fig1, ch.seeds)
ch.figure_data("fig1", fig1_data)

# %% [markdown]
# Where the structure sits, in numbers: the mean accuracy over the *core*
# ($\max(|k_1|, |k_2|) \le 4$), the *blind lines* ($|k_1| = 8$ or $|k_2| = 8$), the *islands*
# on the axes at $|k| = 12$, and the rest of the high frequencies; ours (seed mean), the
# published map on the same cells, and the theory. The last line checks the transposition
# symmetry on the published 16x16 maps, which were trained cell by cell.

# %% tags=["nbval-check-output"]
regions = q.fig1_regions(grid1)
rows = {a: seed_mean(r["test_acc"]) for a, r in fig1.items()} | {f"{a}, published": m for a, m in published1.items()}
region_mean = lambda m, mask: np.asarray(m).ravel()[mask].mean() if mask.any() else np.nan  # noqa: E731
print(pd.DataFrame({name: [region_mean(m, mask) for mask in regions.values()]
                    for name, m in (rows | {"theory": theory1}).items()}, index=list(regions)).round(3).to_string())
print("published maps, mean |A - A^T| over the 16x16 grid:",
      ", ".join(f"{a} {q.transpose_asymmetry(q.published_fig1_map(a, grid).reshape(grid.shape)):.3f}"
                for a in ("logreg", "lenet", "resnet18", "densenet121", "vgg11")))

# %% [markdown]
# Chapter 1's theory explains the blind lines exactly: a $2 \times 2$ average pooling cancels
# its input's highest frequency, and LeNet's second pooling sits after the first, so it cancels
# $|k| = 8$ of the input; every cell on those lines has a Bayes accuracy of exactly 0.5 after the
# two poolings, whatever the classifier after them (the theory column). The islands are aliases:
# after the first pooling, an input frequency $k = 12$ lands on $12 - 16 = -4$, a low frequency
# that the second pooling lets through. Max pooling is not linear, so the theory predicts *where*
# the map can be above chance, not how high it gets.
#
# Finally the data convention. The same model on a few cells of the map, with the released
# code's half margin (`signal="authors"`) instead of the paper's formula, everything else equal:

# %% tags=["nbval-check-output"]
other = "authors" if cfg["signal"] == "paper" else "paper"
contrast = sep.fourier_sweep(model, cfg["contrast_cells"], settings(model, signal=other), **run)
here = sep.select_cells(fig1[model], cfg["contrast_cells"]) if model in fig1 else None
print(pd.DataFrame({f"signal={other!r}": seed_mean(contrast["test_acc"]),
                    **({f"signal={cfg['signal']!r} (Fig. 1)": seed_mean(here["test_acc"])} if here else {}),
                    **({"published": q.published_fig1_map(model, cfg["contrast_cells"])} if model in published1 else {})},
                   index=[str(tuple(c)) for c in cfg["contrast_cells"]]).round(3).to_string())

# %% [markdown]
# Hover over (or click, or tab to) a cell of the maps below to see its direction $v$ in pixel
# space and its Fourier energy, with every model's accuracy on $\mathcal{D}(v)$ (seed means).

# %%
direction_explorer({f"{a} (mean of {len(ch.seeds)} seeds)": seed_mean(r["test_acc"]) for a, r in fig1.items()},
                   grid1, title="Fig. 1, interactively")

# %% [markdown]
# Per seed, the summaries the claims use: the mean test accuracy over the low frequencies
# (`low`, $\max(|k_1|,|k_2|) \le 4$), over the high ones (`high`, $\ge 8$), their difference
# `gap`, the mean over all cells and the mean training accuracy (over the last epoch).

# %% tags=["nbval-check-output"]
per_seed1 = pd.concat({a: pd.DataFrame({**q.band_means(r["test_acc"], grid1, LOW, HIGH),
                                        "all cells": r["test_acc"].reshape(len(ch.seeds), -1).mean(1),
                                        "train acc": r["train_acc"].reshape(len(ch.seeds), -1).mean(1)},
                                       index=pd.Index(ch.seeds, name="seed"))
                       for a, r in fig1.items()}, names=["model", "seed"])
print(per_seed1.round(3).to_string())

# %%
fill1 = dict(cells=grid1.frequencies.__len__(), **budget(model))
if model == "lenet" and "lenet" in fig1:
    gap_pub = float(q.band_means(published1["lenet"][None], grid1, LOW, HIGH)["gap"][0])
    ch.claim("fig1-frequency-gap", values=per_seed1.loc["lenet", "gap"], published_gap=gap_pub, **fill1)
    ch.claim("fig1-matches-published", values=np.abs(fig1["lenet"]["test_acc"] - published1["lenet"]).mean((1, 2)),
             **fill1)
elif model in fig1:
    ch.claim("fig1-low-beats-high", values=per_seed1.loc[model, "gap"], **fill1)
if "logreg" in fig1:
    lr_acc = per_seed1.loc["logreg", "all cells"]
    lr_pub = abs(float(q.band_means(published1["logreg"][None], grid1, LOW, HIGH)["gap"][0]))
    ch.claim("fig1-logreg-flat", values=per_seed1.loc["logreg", "gap"].abs(), published_logreg_gap=lr_pub,
             cells=fill1["cells"], **budget("logreg"),
             preconditions={"logistic regression learned: mean test accuracy >= 0.6 on every seed":
                            bool((lr_acc >= 0.6).all())})
    ch.claim("fig1-logreg-train", values=per_seed1.loc["logreg", "train acc"], **budget("logreg"))

# %% [markdown]
# ## Fig. 2: the bias also shows in optimisation
#
# With little noise ($\sigma = 0.5$) every direction is easy to fit, yet the paper found that the
# number of SGD iterations needed to fit the training set varies by orders of magnitude with the
# direction. We count the iterations until the training loss (averaged over 20 consecutive
# mini-batches) falls below `fig2_threshold` (on the `cpu` profile 0.2, with 2,560 training samples
# for 16 epochs on six cells). A run that never gets there is *censored*: it counts
# as the whole budget, so the averages below are lower bounds. The paper says some directions take
# "much longer"; the claim reads that as at least twice as many iterations on the high frequencies
# as on the low ones, a ratio that censoring can only shrink.

# %%
cells2 = grid1.frequencies if cfg["fig2_cells"] is None else [tuple(c) for c in cfg["fig2_cells"]]
over2 = dict(sigma=cfg["fig2_sigma"], loss_threshold=cfg["fig2_threshold"], **cfg["fig2_train"])
fig2 = {arch: sep.fourier_sweep(arch, cells2, settings(arch, **over2), **run)
        for arch in with_model(cfg["fig2_models"])}
grid2 = sep.covering_subgrid(grid, cells2)
steps2 = {a: r["iter_loss"].shape[-1] for a, r in fig2.items()}
its = {a: q.censored_iterations(r["iters_to_loss"], steps2[a]) for a, r in fig2.items()}
fig = plots.direction_heatmaps({a: plots.map_on_grid(seed_mean(it), cells2, grid2) for a, it in its.items()},
                               grid2, vmin=0, vmax=max(steps2.values()), cmap="magma_r",
                               label=f"iterations to loss < {cfg['fig2_threshold']:g}",
                               title=f"Fig. 2: iterations to a small loss, sigma={cfg['fig2_sigma']:g}\n"
                                     f"(mean of {len(ch.seeds)} seeds; censored = budget; {CONVENTION})")
fig2_data = q.fourier_table(fig2, ch.seeds, keys=("iters_to_loss", "test_acc", "train_acc"))
fig2_data["budget"] = fig2_data["model"].map(steps2)
ch.figure_data("fig2", fig2_data)

# %% tags=["nbval-check-output"]
for arch, it in its.items():
    b = q.band_means(it, cells2, LOW, HIGH)
    reached = fig2[arch]["iters_to_loss"] >= 0
    lows = q.cell_radius(cells2) <= LOW
    print(f"{arch}: loss < {cfg['fig2_threshold']:g} reached in {reached[:, lows].sum()}/{reached[:, lows].size} "
          f"low-frequency and {reached[:, ~lows].sum()}/{reached[:, ~lows].size} other runs "
          f"(budget {steps2[arch]} iterations)")
    print(pd.DataFrame({"low": b["low"], "high": b["high"], "high / low": b["high"] / b["low"]},
                       index=pd.Index(ch.seeds, name="seed")).round(1).to_string())
if model in fig2:
    b = q.band_means(its[model], cells2, LOW, HIGH)
    low_reached = (fig2[model]["iters_to_loss"][:, q.cell_radius(cells2) <= LOW] >= 0).any()
    ch.claim("fig2-low-frequencies-fit-faster", values=b["high"] / b["low"], **budget(model, "fig2_train"),
             preconditions={"some low-frequency run reached the loss threshold": bool(low_reached)},
             settings={"fig2_threshold": cfg["fig2_threshold"], "cells": len(cells2)})

# %% [markdown]
# ## Fig. 3: remove the pooling layers
#
# The paper attributes much of the pattern to pooling, which aliases frequencies (chapter 1). If
# the two max-pooling layers of LeNet are removed (and the first fully connected layer widened to
# take the larger feature map), the paper reports that the accuracy is equalised over the
# frequencies and that it *improves*, although the network has more capacity. The no-pooling
# network costs about six times more per step, so on the `cpu` profile it gets a few cells: one low
# frequency and three where LeNet's pooling blinds or aliases the direction, next to LeNet's Fig. 1
# runs on the same cells (the same settings, the same runs).
#
# "Equalised" alone proves nothing: a network at chance everywhere is perfectly uniform. So there
# are two claims: the accuracy *improves* over the pooled network on the same cells (paired per
# seed), and it is *uniform*, the second tested only if the network learned at all.

# %%
cells3 = grid1.frequencies if cfg["fig3_cells"] is None else [tuple(c) for c in cfg["fig3_cells"]]
grid3 = sep.covering_subgrid(grid, cells3)
fig3 = {}
for arch in cfg["fig3_models"]:
    pooled = model if arch == "lenet_nopool" else arch.replace("_nopool", "")
    fig3[arch] = sep.fourier_sweep(arch, cells3, settings(arch), **run)
    same = pooled in fig1 and settings(pooled) == settings(arch) and set(cells3) <= set(fig1[pooled]["frequencies"])
    fig3[pooled] = (sep.select_cells(fig1[pooled], cells3) if same
                    else sep.fourier_sweep(pooled, cells3, settings(arch), **run))
fig = plots.direction_heatmaps({a: plots.map_on_grid(seed_mean(r["test_acc"]), cells3, grid3) for a, r in fig3.items()},
                               grid3, annotate=True,
                               title=f"Fig. 3: without and with pooling\n(mean of {len(ch.seeds)} seeds; {CONVENTION})")
ch.figure_data("fig3", q.fourier_table(fig3, ch.seeds))

# %% tags=["nbval-check-output"]
per_seed3 = pd.concat({a: pd.DataFrame({**q.band_means(r["test_acc"], cells3, LOW, HIGH),
                                        "all cells": r["test_acc"].mean(1), "train acc": r["train_acc"].mean(1)},
                                       index=pd.Index(ch.seeds, name="seed"))
                       for a, r in fig3.items()}, names=["model", "seed"])
print(per_seed3.round(3).to_string())

# %%
if "lenet_nopool" in fig3 and model in fig3:
    nopool = per_seed3.loc["lenet_nopool"]
    ch.claim("fig3-nopool-improves", values=nopool["all cells"] - per_seed3.loc[model, "all cells"],
             **budget("lenet_nopool"), settings={"cells": len(cells3)})
    ch.claim("fig3-nopool-uniform", values=nopool["gap"].abs(), **budget("lenet_nopool"),
             preconditions={"lenet_nopool learned: mean test accuracy >= 0.6 on every seed":
                            bool((nopool["all cells"] >= 0.6).all())},
             settings={"cells": len(cells3)})

# %% [markdown]
# Pooling is not the only source of the bias (the convolutions and their finite support shape it
# too), but the paper's point is that it is a large one. The verdicts above say whether this
# build bears it out.
#
# ## Fig. 6: accuracy along the NADs
#
# Chapter 2 estimated the NADs $u_0, u_1, \dots$ of the architecture: eigenvectors of the second
# moment of the input gradient over random initialisations, sorted by eigenvalue. The paper's
# claim (Sec. 4.1) is that they order the directions by how easily the network learns them:
# accuracy on $\mathcal{D}(u_i)$ should fall with $i$.
#
# Chapter 2 also found two estimators that give different NADs for LeNet: the authors' *secant*
# (a finite difference with step 100, what their code computes) and the exact *gradient* (the
# paper's written definition). Which of the two predicts trainability? A fair comparison needs
# both estimates to have converged, so first their split-half agreement: the overlap of the top-$k$
# NAD subspaces of two independent half estimates (even and odd networks; 1 = identical, about
# $k/1024$ = unrelated), at the number of networks used. The gradient NADs at a single evaluation
# point need about ten times more networks than the secant ones to settle (chapter 2); averaging
# the gradient over several evaluation points is meant to help, and the table shows whether it
# does at the counts used. We use the **gradient averaged over
# chapter 2's `gradient_points` evaluation points** as the gradient estimator in Fig. 6. The NADs
# come from chapter 2's cache (the same networks and seed; computed here if chapter 2 has not run).

# %%
ch2 = book.resolve("02_nads", profile)
n_nets = {m: ch2[f"{m}_networks"].get(model) or ch2[f"{m}_networks"]["lenet"] for m in ("secant", "gradient")}
points = ch2["gradient_points"]
estimates = {"secant": ch.nads(model, "secant", networks=n_nets["secant"]),
             "gradient, 1 point": ch.nads(model, "gradient", networks=n_nets["gradient"]),
             f"gradient, {points} points": ch.nads(model, "gradient", networks=n_nets["gradient"], points=points)}
for label, (r, where) in estimates.items():
    print(f"{label:>18}: {where}")

# %% tags=["nbval-check-output"]
convergence = q.split_half_table({k: r for k, (r, _) in estimates.items()})
print("split-half overlap of the top-k NADs at the number of networks used (NaN: not recorded, or k > networks/2)")
print(convergence.round(3).to_string())
ck = f"k={cfg['converged_k']}"
converged = {k: bool(convergence.loc[k, ck] >= cfg["converged_overlap"]) for k in convergence.index}

# %% [markdown]
# Now train on $\mathcal{D}(u_i)$ for NAD indices spread from 0 to 1023: `fig6_indices` for the
# secant NADs, `fig6_gradient_indices` (a subset) for the several-point gradient NADs, every index
# with every seed, with Fig. 1's training settings. One setting differs from Fig. 1: the noise.
# The paper states $\sigma = 3$ for its experiments, but with $\sigma = 3$ the accuracy along
# LeNet's NADs falls far earlier than the published curve. We looked for the setting that explains
# the published curve (sample size, epochs, learning rate, outputs, the data convention, the noise)
# and only the ratio of margin to noise moved it; with $\epsilon / \sigma = 1$ the runs met the
# published curve. So this section uses $\sigma$ = `fig6_sigma` = 1, every other setting as in
# Fig. 1. The authors released no script for Fig. 6, so this is an inference from a fit, not a
# documented setting; the table after the figure measures both noise levels again in this
# build. The figure also shows the authors' published Fig. 6 (their data, 10,000 networks, secant
# NADs): LeNet's curve next to ours, and the larger networks as published (the `paper` profile also
# trains them, on the authors' published NADs).

# %%
sigma6 = cfg["fig6_sigma"]
fig6_sets = {"secant": estimates["secant"][0], "gradient": estimates[f"gradient, {points} points"][0]}
top = min(r.nads.shape[0] for r in fig6_sets.values())
indices6 = {"secant": np.array([i for i in cfg["fig6_indices"] if i < top]),
            "gradient": np.array([i for i in cfg["fig6_gradient_indices"] if i < top and i in cfg["fig6_indices"]])}
idx, gidx = indices6["secant"], indices6["gradient"]
tags = {e: f"nad-{e}-{r.meta['networks']}-{r.meta.get('points', 1)}" for e, r in fig6_sets.items()}
fig6, rows6 = {}, []
for est, r in fig6_sets.items():
    ii = indices6[est]
    fig6[est] = sep.directions_sweep(model, r.nads[ii].reshape(len(ii), *r.input_shape), ii.tolist(),
                                     settings(model, sigma=sigma6), tag=tags[est], **run)
    rows6.append(q.nad_index_table(model, est, ii, fig6[est], ch.seeds, r.eigenvalues))
others = {}
for arch in cfg["fig6_models"]:
    r, _ = ch.nads(arch, "published")
    others[arch] = sep.directions_sweep(arch, r.nads[idx].reshape(len(idx), *r.input_shape), idx.tolist(),
                                        settings(arch, sigma=sigma6), tag="nad-published", **run)
    rows6.append(q.nad_index_table(arch, "published NADs", idx, others[arch], ch.seeds, r.eigenvalues))
published = q.published_fig6_table()
pub = {m: d.set_index("nad_index") for m, d in published.groupby("model")}
ours, big = f"{model} (ours) and LeNet (published)", "larger networks (published)"
panels = {ours: {f"{model}, {e} NADs": (indices6[e], f["test_acc"]) for e, f in fig6.items()}
          | {"LeNet, published": (pub["lenet"].index, pub["lenet"]["test_acc"])},
          big: {f"{m}, published": (pub[m].index, pub[m]["test_acc"]) for m in ("resnet18", "densenet121", "vgg11")}
          | {f"{a}, ours (published NADs)": (idx, o["test_acc"]) for a, o in others.items()}}
fig = plots.accuracy_vs_index(panels, {ours: {e: r.eigenvalues for e, r in fig6_sets.items()}},
                              title=f"Fig. 6: test accuracy on D(u_i) along the NADs (ours: {CONVENTION}, "
                                    f"sigma={sigma6:g})")
ch.figure_data("fig6", pd.concat(rows6, ignore_index=True).assign(sigma=sigma6))
ch.figure_data("fig6_published", published)

# %% [markdown]
# The noise, measured: the secant NADs at a few indices trained again with Fig. 1's
# $\sigma$, beside the runs above and the published curve.

# %% tags=["nbval-check-output"]
cidx = [i for i in cfg["fig6_contrast_indices"] if i in idx]
at_fig1_sigma = sep.directions_sweep(model, fig6_sets["secant"].nads[cidx].reshape(len(cidx), *fig6_sets["secant"].input_shape),
                                     cidx, settings(model), tag=tags["secant"], **run)
pos = [int(np.flatnonzero(idx == i)[0]) for i in cidx]
print(pd.DataFrame({f"sigma={cfg['sigma']:g}": seed_mean(at_fig1_sigma["test_acc"]),
                    f"sigma={sigma6:g}": seed_mean(fig6["secant"]["test_acc"])[pos],
                    "published LeNet": pub["lenet"]["test_acc"].reindex(cidx).to_numpy()},
                   index=pd.Index(cidx, name="NAD index")).round(3).to_string())

# %% [markdown]
# Per seed and estimator: the mean accuracy on NADs 0-9 and on NADs past index 700, the Spearman
# rank correlation between the eigenvalue $\lambda_i$ and the accuracy on $\mathcal{D}(u_i)$ over
# the trained indices (positive: the larger the eigenvalue, the easier the direction; since the
# eigenvalues are sorted, it is the rank correlation between *minus* the index and the accuracy),
# and the mean distance to the published LeNet curve at the same indices.

# %% tags=["nbval-check-output"]
summary6 = pd.concat({e: pd.DataFrame([q.nad_index_summary(indices6[e], a, fig6_sets[e].eigenvalues)
                                       for a in f["test_acc"]], index=pd.Index(ch.seeds, name="seed"))
                      .assign(vs_published=np.abs(f["test_acc"] - pub["lenet"]["test_acc"].reindex(indices6[e]).to_numpy()).mean(1))
                      for e, f in fig6.items()}, names=["estimator", "seed"])
print(summary6[["first_mean", "beyond_mean", "spearman", "vs_published"]]
      .rename(columns={"first_mean": "acc NADs 0-9", "beyond_mean": "acc NADs >700",
                       "vs_published": "mean |ours - published|"}).round(3).to_string())

# %%
s6, pub_l = summary6.loc["secant"], pub["lenet"]
fill6 = dict(n_indices=len(idx), networks=n_nets["secant"], **budget(model),
             settings={"indices": idx.tolist(), "sigma": sigma6})
pub_sel = pub_l.reindex(idx)
ch.claim("fig6-monotone", interval=fisher_interval(s6["spearman"]),
         published_spearman=float(q.rank_correlations(pub_sel["test_acc"], pub_sel["eigenvalue"])[0])
         if model == "lenet" else None, **fill6)
if model == "lenet":
    crossing = int(pub_l.index[(pub_l["test_acc"] < 0.75).to_numpy()][0])
    near = int(idx[np.abs(idx - crossing).argmin()])
    ch.claim("fig6-first-vs-beyond", values=s6["first_mean"] - s6["beyond_mean"],
             published_first_beyond=float(pub_sel["test_acc"][idx < 10].mean() - pub_sel["test_acc"][idx > 700].mean()),
             **fill6)
    ch.claim("fig6-crossing", interval=accuracy_interval(fig6["secant"]["test_acc"][:, idx == near].ravel(), cfg["n_test"]),
             crossing=near, published_crossing=float(pub_l["test_acc"].loc[near]), **fill6)
    ch.claim("fig6-matches-published", values=s6["vs_published"], **fill6)
shared = [int(np.flatnonzero(idx == i)[0]) for i in gidx]
secant_on_shared = q.rank_correlations(fig6["secant"]["test_acc"][:, shared], fig6_sets["secant"].eigenvalues[gidx])
ch.claim("fig6-secant-vs-gradient", values=secant_on_shared - summary6.loc["gradient"]["spearman"].to_numpy(),
         gradient_points=points, n_gradient=len(gidx), **budget(model),
         preconditions={f"secant NADs converged (split-half overlap {ck} >= {cfg['converged_overlap']})":
                        converged["secant"],
                        f"gradient NADs converged (split-half overlap {ck} >= {cfg['converged_overlap']})":
                        converged[f"gradient, {points} points"]},
         settings={"indices": gidx.tolist(), "networks": n_nets, "gradient_points": points, "sigma": sigma6})

# %% [markdown]
# Read the comparison of the two estimators through its verdict only. A positive difference whose
# interval excludes zero means the secant NADs predict trainability better; a negative one, the
# gradient NADs; an interval that straddles zero, or an estimate that has not converged, means
# this build cannot tell.
#
# The paper also reads its Fig. 6 across architectures: networks whose gradient covariance has a
# faster-decaying spectrum drop earlier and more sharply, and it names ResNet-18 and DenseNet-121
# as the ones with the stronger bias. Its published curves, counted (accuracy on NADs 0-9, past
# index 700, and the number of indices with accuracy above 0.6):

# %% tags=["nbval-check-output"]
print(pd.DataFrame.from_dict({m: {"NADs 0-9": round(d["test_acc"].loc[:9].mean(), 3),
                                  "NADs > 700": round(d["test_acc"].loc[701:].mean(), 3),
                                  "indices above 0.6": int((d["test_acc"] > 0.6).sum())} for m, d in pub.items()},
                             orient="index").to_string())

# %% [markdown]
# This comparison is fragile by construction. Past index 700 the accuracies sit near chance and
# the eigenvalues are close to each other, so the ranks of those points, and with them one
# seed's rank correlation, can flip with the smallest change upstream: a rounding-level change in
# how the NADs are computed perturbs the directions, the generated data and the SGD trajectories
# there. Its value can therefore move between code versions; only a verdict that holds with more
# seeds would settle the question.
#
# ## Running the sweeps elsewhere
#
# Every map and curve above is a list of independent jobs (`nadcore.experiments.Job`), run by
# `nadcore.experiments.run_jobs` through any `concurrent.futures`-style executor. On one machine
# that is the chapter's process pool (`ch.executor()`). On a cluster, a Dask client is an executor:
#
# ```python
# from distributed import Client
# from nadcore.chapters.linear_separability.runs import grid_sweep
# client = Client("tcp://scheduler:8786")
# res = grid_sweep("resnet18", grid, settings("resnet18"), seeds=[0, 1, 2], executor=client)
# ```
#
# and on Slurm, `submitit` provides one:
#
# ```python
# import submitit
# ex = submitit.AutoExecutor(folder="slurm_logs")
# ex.update_parameters(timeout_min=120, slurm_partition="gpu", gpus_per_node=1)
# res = grid_sweep("densenet121", grid, settings("densenet121"), seeds=[0, 1, 2], executor=ex,
#                  device="cuda", cache=Cache("/shared/nadcache"))
# ```
#
# Finished jobs are written to the cache as soon as they complete; running the same call again
# after an interruption only submits the jobs that are missing.
#
# ## Reproducibility

# %%
ch.finish()
