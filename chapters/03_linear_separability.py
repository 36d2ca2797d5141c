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
# (NeurIPS 2020, Sec. 2) observed that deep convolutional networks do not: whether they
# generalise depends on *where* the discriminative direction points. This chapter reproduces that
# observation (the paper's Figs. 1-3) and then tests the paper's explanation (Sec. 4.1, Fig. 6):
# the neural anisotropy directions of chapter 2 rank the directions from easy to hard to learn.
#
# ## The family $\mathcal{D}(v)$
#
# For a unit vector $v \in \mathbb{S}^{D-1}$, a sample $(x, y) \sim \mathcal{D}(v)$ is
#
# $$ x = \epsilon\, y\, v + w, \qquad y \sim \mathcal{U}\{-1, +1\}, \qquad
#    w \sim \mathcal{N}\!\left(0, \sigma^2 (I_D - v v^\top)\right). $$
#
# The noise has no component along $v$, so $\operatorname{sign}(v^\top x) = y$ always: the
# classes are separated by a margin $\epsilon$ along $v$. With $\sigma = 3$ and $\epsilon = 1$
# the noise carries almost all of the energy of every sample ($\sigma^2 (D-1) \approx 9{,}200$
# against $\epsilon^2 = 1$), so a learner has to *find* the one informative direction among 1,024
# from a finite sample. If the architecture's inductive bias points the right way it will;
# otherwise it fits the noise of the training set and does not generalise.
# (`nadcore.data.directional_dataset`; the training and test sets are independent draws of the
# sizes asked for.)
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
# highest frequencies at the corners (`nadcore.data.fourier_grid`).

# %% tags=["parameters"]
profile = "cpu"
seed = 0
device = "auto"
model = "lenet"
knobs = None

# %%
import json
import time

import numpy as np
import pandas as pd

from nadcore import nads, profiles
from nadcore.cache import Cache
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.plots import separability as sepplots
from nadcore.sweep import (accuracy_stats, directions_sweep, grid_sweep, make_executor,
                           nad_index_summary)
from nadcore.utils import provenance, resolve_device

chapter_start = time.perf_counter()
if isinstance(knobs, str):  # papermill -p knobs '{"fig1_every": 2}' passes a string
    knobs = json.loads(knobs)
cfg = profiles.resolve("03_linear_separability", profile, **(knobs or {}))
dev = resolve_device(device)
cache = Cache()
executor = make_executor(cfg["workers"]) if dev.type == "cpu" else None  # None: in-process
grid = fourier_grid(32, cfg["grid"])
run = dict(seed=seed, chunk=cfg["chunk"], executor=executor, cache=cache, device=str(dev))


def settings(arch, **over):
    """The profile's D(v) and SGD settings for ``arch`` (its own entry, else "default")."""
    s = cfg["train"].get(arch, cfg["train"]["default"])
    return {"sigma": cfg["sigma"], "epsilon": cfg["epsilon"], "n_test": cfg["n_test"], **s, **over}


def with_model(names):
    """The profile's list of architectures with "lenet" replaced by the chapter's ``model``."""
    return list(dict.fromkeys(model if m == "lenet" else m for m in names))


print(f"profile={profile}  model={model}  seed={seed}  device={dev}  workers={cfg['workers']}")

# %%
fig = sepplots.direction_images({f"$k=({a},{b})$": fourier_basis_vector(a, b) for a, b in
                                 [(0, 2), (2, 0), (4, 4), (0, 14), (-16, 6), (-16, -16)]},
                                title="Six Fourier directions in pixel space")

# %% [markdown]
# ## Training
#
# Every network is trained as in the authors' code: plain SGD on mini-batches of 128, a learning
# rate that decays linearly from its maximum to zero over all iterations (updated every batch),
# and the global gradient norm clipped to 0.5 before every step. For LeNet the maximum learning
# rate is 0.5 without momentum or weight decay. The networks have one output trained with the
# logistic loss (the authors used two outputs and cross-entropy, the same model family). The
# paper does not give the recipe of the larger networks in the main text; on the `paper` profile
# they use the follow-up paper's ResNet-18 recipe (maximum learning rate 0.1, momentum 0.9,
# weight decay $10^{-5}$, 30 epochs) with the linear decay. Two deliberate departures from the
# original code: the signal is the paper's $\epsilon y v$ (the code used $\epsilon y v / 2$, a
# harder problem), and the test set has its own size (the code's test set silently had as many
# samples as the training set).
#
# The `paper` profile uses 10,000 training and 10,000 test samples per direction and 20 epochs.
# The default `cpu` profile must finish in minutes on two cores, so it uses **fewer samples and
# epochs** (table below): the accuracies are lower than the paper's, but the contrasts between
# directions are what matters here. All directions of one architecture are trained together:
# `nadcore.train.train_many` trains a chunk of independent networks in one vectorised program,
# exactly as a loop of `nadcore.train.train_classifier` would (see `benchmarks/bench_training.py`
# for the speed-up), and `nadcore.sweep.run_sweep` runs the chunks (through a pool of
# one-thread worker processes when the profile's `workers` > 1, in-process otherwise; any
# `concurrent.futures` executor works, see the end of the chapter) and stores each finished
# chunk in the cache, so an interrupted run resumes.

# %% tags=["nbval-check-output"]
table = pd.DataFrame.from_dict({a: settings(a) for a in dict.fromkeys(
    with_model(cfg["fig1_models"]) + cfg["fig3_models"])}, orient="index")
table["grid"] = [f"{16 // cfg['fig1_every']}x{16 // cfg['fig1_every']}" if a in with_model(cfg["fig1_models"])
                 else f"{16 // cfg['fig3_every']}x{16 // cfg['fig3_every']}" for a in table.index]
print(table.to_string())

# %% [markdown]
# ## Fig. 1: accuracy over the Fourier grid
#
# One dataset $\mathcal{D}(v)$ per grid cell, one freshly initialised network per dataset, test
# accuracy in colour.

# %%
fig1 = {}
for arch in with_model(cfg["fig1_models"]):
    every = cfg["fig1_every"]
    fig1[arch] = grid_sweep(arch, grid.subgrid(every) if every > 1 else grid, settings(arch), **run)
    print(f"{arch:>12}: {fig1[arch]['jobs']} jobs, {fig1[arch]['compute_seconds']:.0f} s of compute")

# %%
fig = sepplots.direction_heatmaps({a: r["test_acc"] for a, r in fig1.items()}, grid.subgrid(cfg["fig1_every"]),
                                  title=f"Test accuracy on D(v), v a Fourier direction ({profile} profile)")

# %% tags=["nbval-check-output"]
stats1 = pd.DataFrame({a: accuracy_stats(r["test_acc"], r["grid"]) for a, r in fig1.items()}).T
stats1["train acc (median)"] = [float(np.median(r["train_acc"])) for r in fig1.values()]
print(stats1.drop(columns="cells").round(3).to_string())

# %% [markdown]
# Logistic regression generalises on every direction: for a linear model all directions are
# alike. LeNet's map is far from uniform although every dataset is equally separable: it learns
# the directions in a low-frequency region around the centre of the map (`low_freq`, the mean
# over $\max(|k_1|,|k_2|) \le 4$) and stays near chance on the high frequencies (`high_freq`,
# $\ge 8$). On the `cpu` profile's small budget the learnable region is a small core; with the
# paper's 10,000 samples and 20 epochs it extends further, mostly along the frequency axes
# (paper Fig. 1), while most high, diagonal frequencies stay out of reach. The network fits part
# of every training set, and the direction decides whether what it fits generalises. This is the
# *directional inductive bias* of the architecture.
#
# ## Fig. 2: the bias also shows in optimisation
#
# With little noise ($\sigma = 0.5$) the task is easy in every direction, yet the paper found that
# the number of SGD iterations needed to fit the training set varies by orders of magnitude with
# the direction. We count the iterations until the training loss (averaged over 20 consecutive
# mini-batches) falls below a small threshold (`fig2_threshold` in the settings; a blank cell
# means the budget ran out first).

# %%
fig2 = {}
for arch in with_model(cfg["fig2_models"]):
    s = settings(arch, sigma=cfg["fig2_sigma"], loss_threshold=cfg["fig2_threshold"], **cfg["fig2_train"])
    fig2[arch] = grid_sweep(arch, grid.subgrid(cfg["fig2_every"]), s, **run)
its = {a: np.where(r["iters_to_loss"] >= 0, r["iters_to_loss"], np.nan).astype(float) for a, r in fig2.items()}
total_iters = {a: r["iter_loss"].shape[-1] for a, r in fig2.items()}
fig = sepplots.direction_heatmaps(its, grid.subgrid(cfg["fig2_every"]), vmin=0,
                                  vmax=max(total_iters.values()), cmap="magma_r",
                                  label="iterations to loss < %.2g" % cfg["fig2_threshold"],
                                  title=f"Iterations to a small training loss, sigma={cfg['fig2_sigma']} "
                                        "(blank: not reached)")

# %% tags=["nbval-check-output"]
for arch, r in fig2.items():
    g2 = r["grid"]
    radius = np.maximum(np.abs(g2.k1), np.abs(g2.k2))
    it = its[arch]
    for name, sel in [("low (|k| <= 4)", radius <= 4), ("high (|k| >= 12)", radius >= 12)]:
        reached = np.isfinite(it[sel])
        med = np.median(it[sel][reached]) if reached.any() else float("nan")
        print(f"{arch}: {name:<17} loss < {cfg['fig2_threshold']} reached in {reached.sum():2d}/{sel.sum():2d} "
              f"directions, median {med:.0f} of {total_iters[arch]} iterations")

# %% [markdown]
# ## Fig. 3: remove the pooling layers
#
# The paper attributes much of the pattern to pooling, which aliases frequencies (chapter 1). If
# the two max-pooling layers of LeNet are removed (and the first fully connected layer widened to
# take the larger feature map) the bias towards frequencies should largely disappear. The
# no-pooling network costs several times more to train, so on the `cpu` profile it gets a
# coarser grid and a smaller budget (settings table above). We show it next to LeNet trained with
# exactly the same settings on the same cells, and next to LeNet's Fig. 1 results (a larger
# budget) on those cells.

# %%
fig3 = {}
for arch in cfg["fig3_models"]:
    pooled = arch.replace("_nopool", "")
    sub = grid.subgrid(cfg["fig3_every"])
    s = settings(arch)
    fig3[arch] = grid_sweep(arch, sub, s, **run)
    fig3[f"{pooled} (same settings)"] = grid_sweep(pooled, sub, s, **run)
    fig1_grid = fig1[pooled]["grid"] if pooled in fig1 and "grid" in fig1[pooled] else (
        grid.subgrid(cfg["fig1_every"]) if cfg["fig1_every"] > 1 else grid)
    if pooled in fig1 and set(sub.frequencies) <= set(fig1_grid.frequencies):
        # the Fig. 1 runs on the same cells (same seeds per frequency)
        cells = [fig1_grid.frequencies.index(f) for f in sub.frequencies]
        fig3[f"{pooled} (Fig. 1 settings)"] = {
            "test_acc": fig1[pooled]["test_acc"].reshape(-1)[cells].reshape(sub.shape), "grid": sub}
fig = sepplots.direction_heatmaps({a: r["test_acc"] for a, r in fig3.items()}, grid.subgrid(cfg["fig3_every"]),
                                  title="Without and with pooling")

# %% tags=["nbval-check-output"]
stats3 = pd.DataFrame({a: accuracy_stats(r["test_acc"], r["grid"]) for a, r in fig3.items()}).T
print(stats3.drop(columns="cells").round(3).to_string())

# %% [markdown]
# Two different questions hide in "more uniform". The *frequency dependence* is measured by
# `freq_gap`, the mean accuracy over low frequencies ($\max(|k_1|,|k_2|) \le 4$) minus the mean over
# high ones ($\ge 8$): pooled LeNet only learns the low frequencies, the no-pooling network shows
# no such preference. The *spread* (max - min) and standard deviation also count the cell-to-cell
# scatter of networks that are only partly trained, which is large on a small budget; they can
# grow when a network goes from failing everywhere to succeeding partly everywhere. The paper's
# point is the first one: without pooling, no frequency is singled out, although the network has
# many more parameters. Pooling is not the only source of the bias (the convolutions and their
# finite support shape it too) but it is a large one.
#
# ## Fig. 6: accuracy along the NADs
#
# Chapter 2 estimated the NADs $u_1, u_2, \dots$ of the architecture: eigenvectors of the
# gradient covariance at initialisation, sorted by eigenvalue. The paper's claim (Sec. 4.1) is that
# they order the directions by how easily the network learns them: accuracy on
# $\mathcal{D}(u_i)$ should fall with $i$. Chapter 2 also showed that the authors' estimator (a
# *secant* with step 100) and the exact *gradient* give very different NADs for LeNet. Which of the
# two predicts trainability? We train on $\mathcal{D}(u_i)$ for NAD indices spread from 0 to 1023,
# for both estimators, with the NADs read from chapter 2's cache (computed there with the same
# number of networks and seed; computed here if chapter 2 has not run).

# %%
ch2 = profiles.resolve("02_nads", profile)
nad_sets = {}
for method in ("secant", "gradient"):
    n_net = ch2[f"{method}_networks"].get(model, ch2[f"{method}_networks"]["lenet"])
    nad_sets[method] = nads.cached_nads(model, method, n_net, seed, device=device,
                                        checkpoints=[c for c in ch2["convergence"] if c < n_net])
    print(f"{method:>8} NADs of {model}: {nad_sets[method].meta['networks']} networks, "
          f"{nad_sets[method].nads.shape[0]} directions")

# %%
idx = np.array([i for i in cfg["fig6_indices"] if i < 1024])
fig6 = {}
for method, r in nad_sets.items():
    ii = idx[idx < r.nads.shape[0]]
    V = r.nads[ii].reshape(len(ii), *r.input_shape)
    fig6[method] = dict(idx=ii, **directions_sweep(model, V, ii.tolist(), settings(model),
                                                     tag=f"nad-{method}-{r.meta['networks']}", **run))
fig = sepplots.accuracy_vs_index({m: (f["idx"], f["test_acc"]) for m, f in fig6.items()},
                                 {m: r.eigenvalues for m, r in nad_sets.items()},
                                 title=f"{model}: test accuracy on D(u_i) and normalised eigenvalues")

# %% tags=["nbval-check-output"]
summary6 = pd.DataFrame({m: nad_index_summary(f["idx"], f["test_acc"], nad_sets[m].eigenvalues)
                         for m, f in fig6.items()}).T
print(summary6[["first_mean", "beyond_mean", "first_n", "beyond_n", "spearman", "p_value"]]
      .rename(columns={"first_mean": "acc NADs 0-9", "beyond_mean": "acc NADs >700"})
      .to_string(float_format=lambda v: f"{v:.3g}"))

# %% [markdown]
# The Spearman coefficient is the rank correlation between the eigenvalue $\lambda_i$ and the
# accuracy on $\mathcal{D}(u_i)$ over the trained indices; since the eigenvalues are sorted it is
# the (negated) rank correlation between index and accuracy. A clearly positive value means the
# estimator's ordering predicts which directions the network learns.
#
# ## What this build measured
#
# The summary below is generated from the numbers above (so it states what *this* run found,
# on this profile).

# %%
s_lr = accuracy_stats(fig1["logreg"]["test_acc"]) if "logreg" in fig1 else None
s_m = accuracy_stats(fig1[model]["test_acc"]) if model in fig1 else None
lines = []
if s_lr:
    lines.append(f"LogReg over {s_lr['cells']} Fourier directions: accuracy {s_lr['min']:.3f}-{s_lr['max']:.3f} "
                 f"(median {s_lr['median']:.3f}).")
if s_m:
    lines.append(f"{model} over {s_m['cells']} Fourier directions: min {s_m['min']:.3f}, median "
                 f"{s_m['median']:.3f}, max {s_m['max']:.3f}.")
for arch in cfg["fig3_models"]:
    pooled = arch.replace("_nopool", "")
    a = stats3.loc[arch]
    for ref in [f"{pooled} (same settings)", f"{pooled} (Fig. 1 settings)"]:
        if ref not in stats3.index:
            continue
        b = stats3.loc[ref]
        verdict = "less" if abs(a["freq_gap"]) < abs(b["freq_gap"]) else "NOT less"
        lines.append(f"{arch} vs {ref} on {int(a['cells'])} cells: {verdict} frequency-dependent (low-high gap "
                     f"{a['freq_gap']:+.3f} vs {b['freq_gap']:+.3f}); spread {a['spread']:.3f} vs "
                     f"{b['spread']:.3f}, std {a['std']:.3f} vs {b['std']:.3f}; min {a['min']:.3f} vs "
                     f"{b['min']:.3f}; cells above 0.55: {a['above_chance']:.0%} vs {b['above_chance']:.0%}.")
for m, row in summary6.iterrows():
    lines.append(f"{m} NADs of {model}: accuracy {row['first_mean']:.3f} on NADs 0-9 vs {row['beyond_mean']:.3f} "
                 f"past index 700; Spearman(eigenvalue, accuracy) = {row['spearman']:.2f} (p = {row['p_value']:.2g}).")
best = summary6["spearman"].idxmax()
lines.append(f"The {best} NADs predict trainability better (higher rank correlation).")
print("\n".join(lines))

# %% [markdown]
# ## Running the sweeps elsewhere
#
# Every grid and curve above is a list of independent jobs (`nadcore.sweep.Job`), run by
# `nadcore.sweep.run_sweep` through any `concurrent.futures.Executor`. On one machine that is a
# process pool (`nadcore.sweep.make_executor`). On a cluster, a Dask client is an executor:
#
# ```python
# from distributed import Client
# from nadcore.sweep import grid_sweep
# client = Client("tcp://scheduler:8786")
# res = grid_sweep("resnet18", grid, settings("resnet18"), executor=client)
# ```
#
# and on Slurm, `submitit` provides one:
#
# ```python
# import submitit
# ex = submitit.AutoExecutor(folder="slurm_logs")
# ex.update_parameters(timeout_min=120, slurm_partition="gpu", gpus_per_node=1)
# res = grid_sweep("densenet121", grid, settings("densenet121"), executor=ex, device="cuda",
#                  cache=Cache("/shared/nadcache"))
# ```
#
# Finished jobs are written to the cache as soon as they complete; running the same call again
# after an interruption only submits the jobs that are missing.
#
# ## Reproducibility

# %%
if executor is not None:
    executor.shutdown()
print(f"profile: {profile}; model: {model}; seed: {seed}; device: {device}")
print(f"settings: {cfg}")
print(f"provenance: {provenance()}")
print(f"chapter wall time: {time.perf_counter() - chapter_start:.0f} s")
