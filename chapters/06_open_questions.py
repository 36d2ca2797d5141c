# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Open questions: what the reviewers asked and the theory the paper left untested
#
# The NeurIPS 2020 reviews of *Neural Anisotropy Directions* {cite:p}`ortizjimenez2020nads`
# asked for experiments the paper did not contain, and the paper itself states a piece of theory
# (Sec. 3) that its main text does not test quantitatively. This chapter takes six of these open
# questions and answers each one with data, at the scale a laptop affords:
#
# 1. **Pooling or other downsampling?** Review 4: would a network that downsamples by striding,
#    like the All Convolutional Net {cite:p}`springenberg2015allconv`, be free of the directional
#    bias? We compare four LeNet-sized networks that differ only in how they halve their feature
#    maps, including the anti-aliased blur-then-subsample layer of {cite:t}`zhang2019shiftinvariant`.
# 2. **NADs during training.** Review 2: the paper computes NADs at initialisation; how do they
#    change while a network trains?
# 3. **Do trained CNNs use NAD directions?** Review 3 doubted that NADs have anything to do with
#    the features a network trained on real images relies on. We remove the components of test
#    images along the first, the last and random directions and see what a trained LeNet loses.
# 4. **Skip connections.** Review 2: how do NADs change with residual connections
#    {cite:p}`he2016resnet`?
# 5. **NADs and the mixed Hessian.** Sec. 3's Lemma 2 bounds how fast a network separates a
#    dipole by two matrices, the gradient covariance and the Gram matrix of the mixed Hessian
#    $\partial^2 f / \partial\theta\,\partial x$, and remarks that their eigenbases are
#    "surprisingly aligned for most networks". We check the paper's worked example exactly and
#    measure the alignment for LeNet.
# 6. **The margin quantity $\alpha(v)$.** The follow-up paper
#    {cite:p}`ortizjimenez2021underspecification` (eq. (2)) states that the accuracy on
#    $\mathcal{D}(v)$ increases with $\alpha(v) = v^\top \mathbb{E}_\theta[\nabla_x f \nabla_x f^\top] v$.
#    We plot one against the other.
#
# Each question gets scorecard claims whose criteria are written in code before the experiment
# runs. These are new experiments, so the "paper" column of a claim states the hypothesis under
# test (the reviewers' question, or what the paper's theory implies), not a published number.
# The library code is in `nadcore.nets.variants`, `nadcore.nads.trained`, `nadcore.nads.mixed_hessian`
# and `nadcore.experiments.open_questions`; the figures in `nadcore.plots.open_questions`.

# %% tags=["parameters"]
profile = "cpu"          # "smoke" (tests), "cpu" (laptop, minutes), "paper" (the papers' scale)
seed = 0                 # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"          # "auto", "cpu" or "cuda"
model = "lenet"          # the network of questions 2, 3 and 5 (registry name or "pkg.mod:factory")
data_root = None         # folder holding the official cifar-10-batches-py (None: the genuine subset)
subset_root = None       # folder holding cifar10_subset.npz (None: default search)
knobs = None             # settings to override, e.g. {"grid_ticks": [0, 8, 16]} (a dict or JSON)

# %%
import numpy as np
import pandas as pd

from nadcore import nads
from nadcore.data import cifar
from nadcore.experiments import open_questions as oq
from nadcore.experiments.nads import cached_nads
from nadcore.nads import mixed_hessian
from nadcore.theory import linear_pooling
from nadcore.theory import pooling as theory
from nadcore.book import setup
from nadcore.runtime import digest
from nadcore.data import fourier_basis_vector, fourier_directions
from nadcore.book.evidence import Criterion, exact_value
from nadcore.experiments import Job, run_jobs
from nadcore.nets import build_model, spec_key
from nadcore.plots import nads as nadplots
from nadcore.plots import open_questions as plots
from nadcore.experiments.separability import grid_sweep, steps_per_run
from nadcore.runtime import generator

ch = setup("06_open_questions", profile=profile, seed=seed, device=device, knobs=knobs, model=model)
cfg = ch.cfg
run = dict(executor=ch.executor(), cache=ch.cache)
D = 32 * 32


def gradient_nads(spec, s):
    """Gradient NADs of a one-channel ``spec``: ``nad_networks`` networks of seed ``s`` (cached)."""
    return cached_nads(spec, "gradient", cfg["nad_networks"], seed=s, device=ch.device,
                            cache=ch.cache)


# %% [markdown]
# ## Pooling against other downsampling
#
# Chapter 1 showed why pooling singles out directions: a subsampling layer is a prefilter
# followed by keeping one sample in $S$, and the subsampling folds the $S$ frequencies
# $\ell, \ell + M, \dots$ onto one output frequency. What survives is decided by the prefilter
# (Theorem 1). Applied to the ways a CNN can halve its feature maps, this gives predictions:
#
# * **strided convolution** (no pooling, the convolution itself takes stride 2): the only prefilter
#   is the convolution, random at initialisation and with no low-pass shape. High frequencies fold
#   onto low ones almost unattenuated, so directions far from the centre of a Fig.-1 map should
#   become learnable: *off-centre islands*;
# * **average pooling** filters with a $2 \times 2$ box, a poor low-pass filter: some aliasing;
# * **blur-pool**, the anti-aliased downsampling of {cite:t}`zhang2019shiftinvariant`: a binomial
#   filter $[1, 2, 1]^\top [1, 2, 1] / 16$ before subsampling by 2. It attenuates high frequencies
#   far more than the box, so it should leave no off-centre islands and confine learning to the
#   lowest frequencies;
# * **max-pooling** (LeNet as published) is nonlinear, and the theory says nothing precise about it.
#
# All four networks have LeNet's layers and feature-map sizes (28, 14, 10, 5) and differ only in
# this one operation:
#
# ```{literalinclude} ../../nadcore/nets/variants.py
# :pyobject: DownsamplingLeNet.downsample
# ```

# %% tags=["nbval-check-output"]
print(pd.DataFrame([{"variant": label, "model": spec,
                     "parameters": sum(p.numel() for p in build_model(spec).parameters())}
                    for label, spec in cfg["variants"].items()]).to_string(index=False))

# %% [markdown]
# ### Their NADs
#
# First the NADs themselves, by the exact-gradient estimator of chapter 2 (`nad_networks`
# randomly initialised networks at the Gaussian evaluation point of the chapter's seed). The
# gradient form is the one in Lemma 2 and in the follow-up's eq. (2), which we test in the last section;
# the authors' secant costs 2,048 forward passes per network, too many for four architectures on a
# laptop.

# %%
nad_sets = {label: gradient_nads(spec, ch.seed) for label, spec in cfg["variants"].items()}
fig = nadplots.nad_grid(nad_sets, indices=(0, 1, 2, 3),
                        title=f"First gradient NADs of the LeNet variants (seed {ch.seed})")
ch.figure_data("nads_variants", oq.nad_table(nad_sets, (0, 1, 2, 3), seed=ch.seed))

# %%
fig = nadplots.spectra(nad_sets, title="Normalised eigenvalues of the gradient covariance")
ch.figure_data("nad_spectra", pd.DataFrame(
    [{"variant": label, "seed": ch.seed, "index": i, "eigenvalue": lam}
     for label, r in nad_sets.items() for i, lam in enumerate(r.normalized_spectrum())]))

# %% [markdown]
# ### Fig.-1 maps
#
# Each variant is trained on $\mathcal{D}(v)$ for every Fourier direction $v$ of a coarse grid,
# with the authors' LeNet recipe (SGD, learning rate decaying linearly from 0.5, gradient clipping
# 0.5, one output with the logistic loss). The distribution of a map is symmetric under mirroring
# and transposing the image (exactly for the pooling networks; the strided convolutions never read
# the last row and column of the image, a negligible asymmetry), so we train only the quadrant
# $k_1, k_2 \ge 0$; the constant direction
# sits in the bottom-left corner and the highest frequency $(16, 16)$ in the top-right one. On the
# `cpu` profile the grid has stride 4 and the problem is made easier than the paper's
# ($\sigma = 1$ instead of 3, 1,200 training samples and 10 epochs instead of 10,000 and 20, batches
# of 32 instead of 128), so that the short runs learn something; the `paper` profile restores the
# paper's settings on a stride-2 grid.
#
# The criteria are fixed before the runs. An *island* is a cell with
# $\max(k_1, k_2) \ge$ `off_centre` (8) whose accuracy reaches `island` (0.6); the anisotropy of a
# map is the standard deviation of its accuracies (0 for a network to which all directions look
# alike).

# %%
grid = oq.quadrant_grid(cfg["grid_ticks"])
dv_settings = {**cfg["dv"], **cfg["dv_train"]}
crit1 = {
    "oq1-maxpool-islands": Criterion("share of off-centre cells learned by max-pool", ">=", 0.05),
    "oq1-blur-removes-islands": Criterion("share of off-centre cells learned: blur-pool minus max-pool", "<=", -0.05),
    "oq1-blur-below-avg": Criterion("mean off-centre accuracy, blur-pool minus average pooling", "<", 0.0),
    "oq1-strided-islands": Criterion("share of off-centre cells learned: strided conv minus max-pool", ">=", 0.1),
    "oq1-strided-isotropic": Criterion("anisotropy (std of the map's accuracies): strided conv minus max-pool", "<", 0.0),
}
maps = {label: grid_sweep(spec, grid, dv_settings, seeds=ch.seeds, chunk=cfg["chunk"],
                          device=str(ch.device), **run)
        for label, spec in cfg["variants"].items()}

# %%
fig = plots.quadrant_maps({label: r["test_acc"].mean(0) for label, r in maps.items()}, grid,
                          title=f"Test accuracy on D(v), v a Fourier direction ({profile} profile)")
ch.figure_data("fig1_maps", pd.DataFrame(
    [{"variant": label, "seed": s, "k1": k1, "k2": k2, "test_acc": r["test_acc"][i][idx],
      "train_acc": r["train_acc"][i][idx]}
     for label, r in maps.items() for i, s in enumerate(ch.seeds)
     for idx, (k1, k2) in zip(np.ndindex(grid.shape), grid.frequencies)]))

# %% tags=["nbval-check-output"]
summ = {label: oq.map_summary(r["test_acc"], grid, cfg["off_centre"], cfg["island"])
        for label, r in maps.items()}
print(pd.DataFrame({label: {**{k: v.mean() for k, v in s.items()},
                            "train acc (median)": np.median(maps[label]["train_acc"])}
                    for label, s in summ.items()}).T.round(3).to_string())
learned = {label: bool(np.all(r["test_acc"].reshape(len(ch.seeds), -1).max(1) >= cfg["island"]))
           for label, r in maps.items()}
steps = steps_per_run(dv_settings)
paper_steps = steps_per_run({**ch.paper_cfg["dv"], **ch.paper_cfg["dv_train"]})
ch.claim("oq1-maxpool-islands", "Aliasing theory (chapter 1): subsampling folds high frequencies onto low "
         "ones, so a pooling network can learn some directions far from the centre of the map (islands).",
         crit1["oq1-maxpool-islands"], values=summ["max-pool"]["islands"], steps=steps,
         paper_steps=paper_steps, preconditions={"max-pool learned some direction": learned["max-pool"]})
ch.claim("oq1-blur-removes-islands", "Aliasing theory: an anti-aliasing low-pass filter before subsampling "
         "removes the off-centre islands.", crit1["oq1-blur-removes-islands"],
         values=summ["blur-pool"]["islands"] - summ["max-pool"]["islands"], steps=steps, paper_steps=paper_steps,
         preconditions={"both networks learned some direction": learned["blur-pool"] and learned["max-pool"]})
ch.claim("oq1-blur-below-avg", "Theorem 1: with the better low-pass filter (binomial instead of box) "
         "high-frequency directions lose more information, so blur-pool does worse off centre than "
         "average pooling.", crit1["oq1-blur-below-avg"],
         values=summ["blur-pool"]["off_centre"] - summ["average pool"]["off_centre"], steps=steps,
         paper_steps=paper_steps)
ch.claim("oq1-strided-islands", "Review 4 asked whether strided (all-convolutional) networks escape the "
         "directional bias; aliasing theory predicts that subsampling without a low-pass prefilter makes "
         "many more off-centre directions learnable.", crit1["oq1-strided-islands"],
         values=summ["strided conv"]["islands"] - summ["max-pool"]["islands"], steps=steps,
         paper_steps=paper_steps,
         preconditions={"both networks learned some direction": learned["strided conv"] and learned["max-pool"]})
ch.claim("oq1-strided-isotropic", "Review 4's question, answered directly: the strided network's accuracy "
         "depends less on the direction than max-pooling LeNet's.", crit1["oq1-strided-isotropic"],
         values=summ["strided conv"]["std"] - summ["max-pool"]["std"], steps=steps, paper_steps=paper_steps);

# %% [markdown]
# How to read the maps: the bottom-left corner is the constant direction, rows and columns step up
# in frequency. What the theory leads us to expect, and the claims above test:
#
# * max-pooling LeNet learns the lowest frequencies and, as aliasing predicts, possibly a few
#   isolated cells far from the centre: the islands;
# * blur-pool should remove them and confine learning to the lowest frequencies, with average
#   pooling, whose box filter lets more through, in between. A difference of a few cells between
#   those two is within the seed noise, which the interval of the third claim shows;
# * the strided network, without any prefilter, passes each frequency and its aliases to the later
#   layers with comparable strength, so nothing singles out the low frequencies: its map should be
#   flatter, and its NAD spectrum above should decay the least. If the last two claims hold, the
#   reviewer's question has the answer "yes, at this scale": an all-convolutional LeNet is largely
#   free of the directional bias on $\mathcal{D}(v)$.
#
# Two caveats. The `cpu` problem is easy ($\sigma = 1$); with $\sigma = 3$ a strided network can
# overfit its training sets in every direction alike: uniformly, but uniformly badly. And all
# variants use max-pool LeNet's learning rate; a network whose prefilter attenuates its input (blur)
# also trains more slowly (Lemma 1), so part of any difference is speed, not reach.

# %% [markdown]
# ## NADs during training
#
# The paper's NADs belong to an *architecture*: eigenvectors of $\mathbb{E}_\theta[\nabla_x f\,
# \nabla_x f^\top]$, an average over random initialisations at one input. A trained network is a
# single $\theta$, so that average has nothing left to average: three seeds would give a covariance
# of rank three in 1,024 dimensions, and training a thousand networks per epoch is out of reach.
# We therefore define the **NADs of one network** by averaging over its *inputs* instead,
#
# $$C(\theta) = \mathbb{E}_{x}\big[\nabla_x f_\theta(x)\, \nabla_x f_\theta(x)^\top\big],$$
#
# the expected gradient outer product over a fixed set of evaluation inputs (the first
# `eval_points` test inputs of the task), with $f_\theta$ the network's single output (the logit
# of the binary task). Its eigenvectors say which input directions move this network's decision;
# at epoch 0 they are those of one random network of the architecture. Using the same inputs and
# the same definition at every epoch makes the epochs comparable, and each seed (its own
# initialisation, data and batch order) gives an independent trajectory.
#
# ```{literalinclude} ../../nadcore/nads/trained.py
# :pyobject: network_nads
# ```
#
# Two tasks, both with a scalar output: $\mathcal{D}(v)$ with $v$ the Fourier direction
# `dynamics_direction` (one the max-pool LeNet learns, see the maps above), and binary CIFAR-10 (the
# follow-up paper's split: airplane to deer against dog to truck) on the genuine CIFAR-10 subset,
# three colour channels, so $D = 3{,}072$ there. We follow the overlap
# $\lVert U_k(t)\, U_k(0)^\top \rVert_F^2 / k$ of the top-$k$ NADs at epoch $t$ with those at
# epoch 0 (1 = the same subspace, $k/D$ = chance), and for $\mathcal{D}(v)$ also the share of $v$
# that the first NADs capture and their overlap with the architecture's NADs as the paper computes
# them (`reference_nads`: by default the authors' published secant NADs).

# %% tags=["nbval-check-output"]
ks = cfg["overlap_ks"]
v = fourier_basis_vector(*cfg["dynamics_direction"]).numpy()
data = cifar.load_cifar10(data_root, subset_root, max_train=cfg["max_train"], max_test=cfg["max_test"])
print(data.summary())
crit2 = {
    "oq2-dv-turns-to-v": Criterion("share of v in the trained network's first NAD (D(v))", ">=", 0.5),
    "oq2-cifar-nads-persist": Criterion(f"top-{max(ks)} overlap of the trained network's NADs with its "
                                        "initial NADs (binary CIFAR-10)", ">=", 0.5),
}

# %%
basis, basis_source = ch.nads(model, source=cfg["reference_nads"])
U = nads.complete_basis(basis.nads)
reference = U[: max(ks)]
dv_jobs = [Job({**spec_key(model), "seed": s, "direction": cfg["dynamics_direction"], "data": cfg["dv"],
                "train": cfg["dv_train"], "ks": ks, "eval_points": cfg["eval_points"],
                "reference": digest(reference)}, {"v": v, "reference": reference, "device": str(ch.device)})
           for s in ch.seeds]
data_spec = {"root": data_root, "subset_root": subset_root, "max_train": cfg["max_train"],
             "max_test": cfg["max_test"]}
data_key = {k: data.description.get(k) for k in ("name", "n_train", "n_test", "sha256")}
cifar_jobs = [Job({**spec_key(model), "seed": s, "train": cfg["cifar_train"], "ks": ks,
                   "eval_points": cfg["eval_points"], "removal_ks": cfg["removal_ks"],
                   "nads": digest(U), "data": data_key},
                  {"nad_basis": U, "data_spec": data_spec, "device": str(ch.device)})
              for s in ch.seeds]
dv_res = [a for a, _ in run_jobs(dv_jobs, oq.dv_dynamics_job, **run)]
cf_res = [a for a, _ in run_jobs(cifar_jobs, oq.cifar_dynamics_job, **run)]

# %%
stack = lambda res, key: np.stack([a[key] for a in res])  # noqa: E731  (seeds, epochs + 1, ...)
tasks = {f"D(v), v = Fourier {tuple(cfg['dynamics_direction'])}": (dv_res, D),
         "binary CIFAR-10": (cf_res, 3 * D)}
fig = plots.dynamics_curves({name: stack(res, "overlap_initial") for name, (res, _) in tasks.items()}, ks,
                            chance={name: [k / d for k in ks] for name, (_, d) in tasks.items()},
                            ylabel="overlap with the initial NADs",
                            title="How far the network's NADs move from those at initialisation")
rows = []
for name, (res, _) in tasks.items():
    for s, a in zip(ch.seeds, res):
        for t in range(a["overlap_initial"].shape[0]):
            for j, k in enumerate(ks):
                rows.append({"task": name, "seed": s, "epoch": t, "k": k,
                             "overlap_initial": a["overlap_initial"][t, j], "test_acc": a["test_acc"][t],
                             "captured_v": a["captured_v"][t, j] if "captured_v" in a else np.nan,
                             "overlap_architecture": a["overlap_reference"][t, j] if "overlap_reference" in a else np.nan})
ch.figure_data("nads_during_training", pd.DataFrame(rows))

# %% [markdown]
# For $\mathcal{D}(v)$ two more curves: how much of the discriminative direction $v$ the network's
# first NADs capture, and how much their span overlaps the *architecture's* NADs (the
# `reference_nads`).

# %%
name_dv = next(iter(tasks))
fig = plots.dynamics_curves({"share of v in the top-k NADs": stack(dv_res, "captured_v"),
                             "overlap with the architecture's NADs": stack(dv_res, "overlap_reference")},
                            ks, chance={"share of v in the top-k NADs": [k / D for k in ks],
                                        "overlap with the architecture's NADs": [k / D for k in ks]},
                            ylabel="share / overlap", title=name_dv)

# %% tags=["nbval-check-output"]
table = pd.DataFrame([{"task": name, "epoch": t, "test acc": stack(res, "test_acc")[:, t].mean(),
                       **{f"overlap k={k}": stack(res, "overlap_initial")[:, t, j].mean() for j, k in enumerate(ks)}}
                      for name, (res, _) in tasks.items()
                      for t in sorted({0, 1, stack(res, "test_acc").shape[1] - 1})])
print("means over seeds; the overlap at chance is k/D")
print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
captured = stack(dv_res, "captured_v")[:, -1, 0]
dv_steps = steps_per_run(dv_settings)
n_cifar = data.description["n_train"]
cifar_steps = cfg["cifar_train"]["epochs"] * -(-n_cifar // cfg["cifar_train"]["batch_size"])
paper_cifar_steps = ch.paper_cfg["cifar_train"]["epochs"] * -(-50000 // ch.paper_cfg["cifar_train"]["batch_size"])
ch.claim("oq2-dv-turns-to-v", "Review 2 asked how NADs change during training. Hypothesis: training on "
         "D(v) turns the network's first NAD towards the discriminative direction v.",
         crit2["oq2-dv-turns-to-v"], values=captured, steps=dv_steps, paper_steps=paper_steps,
         preconditions={"D(v) learned (test accuracy >= 0.6 for every seed)":
                        bool(stack(dv_res, "test_acc")[:, -1].min() >= 0.6)})
ch.claim("oq2-cifar-nads-persist", "Review 2 asked how NADs change during training. Hypothesis (the "
         "reading of NADs computed at initialisation as a lasting property of the network): most of a "
         "network's initial top-k NAD subspace survives training on CIFAR-10.", crit2["oq2-cifar-nads-persist"],
         values=stack(cf_res, "overlap_initial")[:, -1, -1], steps=cifar_steps, paper_steps=paper_cifar_steps,
         preconditions={"the network learned (test accuracy >= 0.55 for every seed)":
                        bool(stack(cf_res, "test_acc")[:, -1].min() >= 0.55)});

# %% [markdown]
# How to read the curves: an overlap that stays near 1 would make the NADs at initialisation a
# lasting property of the trained network; one that falls towards $k/D$ means the network's
# sensitivity leaves its initial subspace. On $\mathcal{D}(v)$ the movement, if any, should have a
# direction: towards $v$, the only direction the task rewards (the first claim). A single random
# network's sensitivity need not share much with the architecture's NADs, which summarise many
# networks. Either way the architecture's NADs describe where training *starts* and which solutions
# are easy to reach (chapters 3 and 4); the second claim says whether they also survive as the
# trained network's own sensitivity.

# %% [markdown]
# ## Do trained CNNs use the NAD directions of real images?
#
# Review 3 proposed the direct test: take a network trained on CIFAR-10 and remove the components
# of test images along NADs. We use the binary CIFAR-10 networks of the previous section (after their
# last epoch) and the NADs of the chapter's model (`reference_nads`: by default the authors' published
# 10,000-network NADs; the 1,024-dimensional NADs act on each colour channel, as in chapter 4). For
# each $k$ we project out, in every channel of every (normalised) test image,
#
# * the **first $k$ NADs**, the directions the architecture is most sensitive to at
#   initialisation;
# * the **last $k$ NADs**;
# * **$k$ random directions** (a uniformly random subspace, drawn per seed);
# * the **first $k$ principal directions of the training images**, the directions that carry the
#   most image energy: a control for "the first NADs are smooth, so removing them removes a lot
#   of image".

# %% tags=["nbval-check-output"]
print(f"NADs removed: {basis_source}")
removal = stack(cf_res, "removal_acc")          # (seeds, sets, ks)
energy = stack(cf_res, "removal_energy")
clean = stack(cf_res, "clean_acc")
rk = cfg["removal_ks"]
crit3 = {
    "oq3-first-vs-last": Criterion("accuracy with the last 16 NADs removed minus with the first 16 removed", ">=", 0.02),
    "oq3-beyond-energy": Criterion("accuracy with the first 16 image principal directions removed minus "
                                   "with the first 16 NADs removed", ">", 0.0),
}
print(f"clean test accuracy (binary): {clean.mean():.3f} (seeds: {', '.join(f'{c:.3f}' for c in clean)})")
print(pd.DataFrame({f"{name}, k={k}": {"accuracy": removal[:, i, j].mean(), "energy removed": energy[:, i, j].mean()}
                    for i, name in enumerate(oq.REMOVALS) for j, k in enumerate(rk)}).T
      .to_string(float_format=lambda x: f"{x:.3f}"))

# %%
fig = plots.removal_curves(rk, {n: removal[:, i] for i, n in enumerate(oq.REMOVALS)},
                           {n: energy[:, i] for i, n in enumerate(oq.REMOVALS)}, clean,
                           title=f"Trained {model} on binary CIFAR-10: removing directions from the test images")
ch.figure_data("removal", pd.DataFrame(
    [{"seed": s, "directions": n, "k": k, "test_acc": removal[a, i, j], "energy_removed": energy[a, i, j]}
     for a, s in enumerate(ch.seeds) for i, n in enumerate(oq.REMOVALS) for j, k in enumerate(rk)]))

# %% tags=["nbval-check-output"]
j16 = rk.index(16)
first, last, pcs = (oq.REMOVALS.index(n) for n in ("first NADs", "last NADs", "data PCs"))
above = {"the trained network beats chance (clean accuracy >= 0.55 for every seed)": bool(clean.min() >= 0.55)}
ch.claim("oq3-first-vs-last", "Review 3 doubted that trained CNNs rely on NAD directions. Hypothesis: "
         "removing the first NADs from test images hurts a trained network more than removing the last.",
         crit3["oq3-first-vs-last"], values=removal[:, last, j16] - removal[:, first, j16],
         steps=cifar_steps, paper_steps=paper_cifar_steps, preconditions=above)
ch.claim("oq3-beyond-energy", "The first NADs matter beyond the image energy they carry: removing them "
         "hurts more than removing as many of the images' principal directions.", crit3["oq3-beyond-energy"],
         values=removal[:, pcs, j16] - removal[:, first, j16], steps=cifar_steps,
         paper_steps=paper_cifar_steps, preconditions=above);

# %% [markdown]
# The table gives the share of the images' energy each removal takes away beside the accuracy it
# leaves. The last NADs and random directions carry little energy; the first NADs are smooth,
# low-frequency patterns that carry a sizeable share of every image. That is why the principal
# directions are the harder control: they remove at least as much energy as the same number of
# NADs. If the accuracy still drops more when the first NADs go (the second claim), the network
# depends on these particular directions and not merely on how much of the image is gone.

# %% [markdown]
# ## Skip connections
#
# Review 2 asked how NADs change with residual connections. We take a narrow residual network
# (width 8, a 3x3 stem, two basic blocks, the second one halving the resolution with a 1x1 strided
# projection on its shortcut, then a 4x4 average pool and a linear layer, no batch norm) and the
# same network with both shortcuts removed. Without the skips it is a plain five-layer CNN.
#
# ```{literalinclude} ../../nadcore/nets/variants.py
# :pyobject: ResidualNet.forward
# ```
#
# A hypothesis from the aliasing picture, fixed before the run: with the skips, the input reaches
# the pooling head through the identity and a 1x1 convolution with stride 2, a subsampling without
# any prefilter, so the gradients should put more of their energy at high frequencies. We measure
# the share of $\mathbb{E}\lVert\nabla_x f\rVert^2$ within Fourier radius 8 of the zero frequency,
# the share in the first 16 NADs, and the overlap of the two networks' NADs at the same evaluation
# point (per seed). An overlap below 1 can be Monte Carlo noise: the yardstick is the split-half
# overlap of one network's NADs, two estimates from disjoint halves of its networks. If removing
# the skips changed nothing, the two networks' full estimates would agree at least that well.

# %%
crit4 = {
    "oq4-skip-high-frequency": Criterion("low-frequency share of the gradient energy, with minus without skips", "<", 0.0),
    "oq4-skip-changes-nads": Criterion("top-16 overlap of the NADs with and without skips minus the split-half "
                                       "overlap of the estimate with skips", "<", 0.0),
}
N4 = cfg["skip_nad_networks"]
res_nads = {label: [cached_nads(spec, "gradient", N4, seed=s, device=ch.device, cache=ch.cache)
                    for s in ch.seeds]
            for label, spec in cfg["resnets"].items()}
fig = nadplots.nad_grid({label: r[0] for label, r in res_nads.items()}, indices=(0, 1, 2, 3),
                        title=f"First gradient NADs with and without skip connections (seed {ch.seed})")
ch.figure_data("nads_skip", oq.nad_table({label: r[0] for label, r in res_nads.items()},
                                                 (0, 1, 2, 3), seed=ch.seed))

# %%
fig = nadplots.spectra({label: r[0] for label, r in res_nads.items()},
                       title="Normalised NAD spectra with and without skip connections")
spec_rows = [{"network": label, "seed": s, **oq.spectrum_summary(r.eigenvalues, r.nads)}
             for label, rs in res_nads.items() for s, r in zip(ch.seeds, rs)]
ch.figure_data("skip_spectra", pd.DataFrame(
    [{"network": label, "seed": s, "index": i, "eigenvalue": lam}
     for label, rs in res_nads.items() for s, r in zip(ch.seeds, rs) for i, lam in enumerate(r.normalized_spectrum())]))

# %% tags=["nbval-check-output"]
labels = list(cfg["resnets"])
skip_overlap = np.array([[nads.subspace_overlap(a.nads, b.nads, k) for k in nads.OVERLAP_KS]
                         for a, b in zip(*res_nads.values())])
split_half = {label: np.array([r.extras["split_half"] for r in rs]) for label, rs in res_nads.items()}
print(pd.DataFrame(spec_rows).groupby("network")[["top_k", "low_frequency", "first_low"]].mean()
      .rename(columns={"top_k": "share in top 16", "low_frequency": "low-frequency share",
                       "first_low": "NAD 0 low-frequency share"}).round(3).to_string())
print(pd.DataFrame({"with vs without skips": skip_overlap.mean(0),
                    **{f"split-half, {label}": sh.mean(0) for label, sh in split_half.items()},
                    "chance k/D": np.array(nads.OVERLAP_KS) / D},
                   index=[f"k={k}" for k in nads.OVERLAP_KS]).T.round(3).to_string())
low = {label: np.array([r["low_frequency"] for r in spec_rows if r["network"] == label]) for label in labels}
ch.claim("oq4-skip-high-frequency", "Review 2 asked how skip connections change NADs. Hypothesis: the skip "
         "path subsamples without a prefilter, so with skips the input gradients carry more high-frequency "
         "energy.", crit4["oq4-skip-high-frequency"], values=low[labels[0]] - low[labels[1]], trained=False)
ch.claim("oq4-skip-changes-nads", "Review 2 asked how NADs change with skip connections. Hypothesis: "
         "removing the skips changes the top NAD subspace by more than Monte Carlo noise.",
         crit4["oq4-skip-changes-nads"], values=skip_overlap[:, 2] - split_half[labels[0]][:, 2],
         trained=False, settings={"skip_nad_networks": N4});

# %% [markdown]
# The table puts the overlap of the two networks' NADs beside the split-half overlap of each one's
# own estimate, and the low-frequency share of the gradient energy beside it. The two claims are
# separate questions: whether the skips change the NADs at all (beyond Monte Carlo noise), and
# whether they change them in the way the aliasing argument suggests (more high-frequency energy).
# One can hold without the other; the spectra and first NADs above show what the skips change
# instead, for example how concentrated the spectrum is in its first NADs.

# %% [markdown]
# ## NADs and the mixed Hessian (the paper's Sec. 3)
#
# Lemma 2 of the paper bounds how fast a network can learn to separate a discriminative dipole
# $(x, x + v)$: the bound grows with two quadratic forms in $v$,
#
# $$v^\top\, \mathbb{E}_\theta\big[\nabla_x f\, \nabla_x f^\top\big]\, v
#   \qquad\text{and}\qquad
#   v^\top\, \mathbb{E}_\theta\big[J^\top J\big]\, v, \quad J = \frac{\partial^2 f}{\partial\theta\,\partial x},$$
#
# so the NADs (eigenvectors of the first) and the expected right singular vectors of the mixed
# Hessian (eigenvectors of the second) both rank directions. For the deep linear model of pooling
# of chapter 1, $f(x) = \theta^\top A(m \odot \phi \odot x)$ with $A = \frac1S[I_M \cdots I_M]$,
# $\theta \sim \mathcal{N}(0, \sigma_\theta^2 I_M)$ and $\phi \sim \mathcal{N}(0, \sigma_\phi^2 I_D)$,
# the paper works both out (eqs. (4)-(5)). With our normalisation of $A$:
#
# $$\mathbb{E}\big[\nabla_x f \nabla_x f^\top\big] = \frac{\sigma_\theta^2\sigma_\phi^2}{S^2}
#   \operatorname{diag}(m^2), \qquad
#   \mathbb{E}\big[J^\top J\big] = \frac{\sigma_\theta^2 + \sigma_\phi^2}{S^2}\operatorname{diag}(m^2).$$
#
# Both are diagonal with the same ordering, so the two bases coincide: the canonical basis sorted
# by $m^2$. Derivation: $\nabla_x f = (A^\top\theta) \odot m \odot \phi$ with
# $(A^\top\theta)_t = \theta_{t \bmod M}/S$; $J$ stacks
# $\partial^2 f/\partial\phi\,\partial x = \operatorname{diag}((A^\top\theta) \odot m)$ and
# $\partial^2 f/\partial\theta\,\partial x = A \operatorname{diag}(m \odot \phi)$, and
# $A^\top A$ is $1/S^2$ on the pairs $t \equiv t' \pmod M$, which the independent $\phi_t$ reduce to
# the diagonal. The paper prints $\sigma_\phi^2\sigma_\theta^2\operatorname{diag}(m^2)$ and (in the
# extracted text) $(\sigma_\theta^2 + \sigma_\phi^2/S)\operatorname{diag}(m^2)$; the powers of $S$
# depend on how $A$ is normalised and do not change the eigenvectors.
#
# **An exact check.** The output is bilinear in $(\theta, \phi)$, so $\nabla_x f$ is bilinear and
# $J$ linear in the parameters, and Gaussian averages reduce to sums over basis vectors:
# $\mathbb{E}[gg^\top] = \sigma_\theta^2\sigma_\phi^2 \sum_{j,t} g(e_j, e_t) g(e_j, e_t)^\top$ and
# $\mathbb{E}[J^\top J] = \sigma_\theta^2 \sum_j J(e_j, 0)^\top J(e_j, 0) + \sigma_\phi^2 \sum_t J(0, e_t)^\top J(0, e_t)$.
# `nadcore.nads.mixed_hessian.linear_pooling_moments` evaluates these sums by automatic differentiation,
# with the same mixed-Hessian code that serves LeNet below; a Monte Carlo average over random
# parameters checks the same code path once more.

# %% tags=["nbval-check-output"]
LD, LS = cfg["linear_D"], cfg["linear_S"]
m_lin = np.abs(theory.average_pooling_prefilter(LD, LS))
s_th, s_ph = cfg["linear_sigmas"]
closed = {"gradient": linear_pooling.expected_gradient_covariance(m_lin, s_th, s_ph, LS),
          "mixed": linear_pooling.expected_mixed_gram(m_lin, s_th, s_ph, LS)}
exact = mixed_hessian.linear_pooling_moments(m_lin, LS, s_th, s_ph)
mc = mixed_hessian.linear_pooling_monte_carlo(m_lin, LS, s_th, s_ph, cfg["linear_draws"], generator(seed, 61))
rel = lambda a, b: float(np.abs(a - b).max() / np.abs(b).max())  # noqa: E731
err_exact = max(rel(exact[k], closed[k]) for k in closed)
err_mc = max(rel(mc[k], closed[k]) for k in closed)
print(f"D = {LD}, S = {LS}, sigma_theta = {s_th}, sigma_phi = {s_ph}")
print(f"eqs. (4)-(5) vs the exact Gaussian averages: largest relative difference < 1e-12: {err_exact < 1e-12}")
print(f"eqs. (4)-(5) vs {cfg['linear_draws']} Monte Carlo draws: largest relative difference {err_mc:.3f}")
passed = np.diag(exact["gradient"]) > 0  # m vanishes at the multiples of M
ratio = np.diag(exact["mixed"])[passed] / np.diag(exact["gradient"])[passed]
print(f"E[J^T J] / E[g g^T] on the diagonal where m != 0: {ratio.min():.4f} .. {ratio.max():.4f} "
      f"(closed form (s_theta^2 + s_phi^2) / (s_theta^2 s_phi^2) = {(s_th**2 + s_ph**2) / (s_th**2 * s_ph**2):.4f})")
ch.claim("oq5-eq4-eq5-exact", "Sec. 3, eqs. (4)-(5): for the linear model of pooling the gradient covariance and "
         "the Gram matrix of the mixed Hessian are both proportional to diag(m^2), so their eigenbases coincide.",
         Criterion("largest relative difference of the exact Gaussian averages from the closed forms", "<=", 1e-9),
         interval=exact_value(err_exact, "exact (autograd sums over basis vectors)"), trained=False)
ch.claim("oq5-eq4-eq5-monte-carlo", "Sec. 3, eqs. (4)-(5), checked by sampling: Monte Carlo averages over "
         "random parameters agree with the closed forms.",
         Criterion("largest relative difference of the Monte Carlo averages from the closed forms", "<=",
                   round(12 / np.sqrt(cfg["linear_draws"]), 4)),
         interval=exact_value(err_mc, "Monte Carlo average"), trained=False,
         settings={"linear_draws": cfg["linear_draws"]});

# %% [markdown]
# **LeNet.** For a real network neither matrix has a closed form. The gradient NADs come from
# chapter 2's estimator. The mixed-Hessian Gram $\frac1N\sum_n J_n^\top J_n$ comes from
# `hessian_networks` networks: for one network, $Jw$ is a forward-mode derivative of
# $\nabla_\theta f$ along the input direction $w$ and $J^\top u$ a reverse-mode one, so
# $J^\top J w$ costs two passes and no Hessian is ever formed. Applied to the columns of the
# identity it gives the $D \times D$ matrix. The networks and the evaluation point are those of the
# gradient NADs of the same seed (the first `hessian_networks` of them).
#
# ```{literalinclude} ../../nadcore/nads/mixed_hessian.py
# :pyobject: mixed_gram_product
# ```

# %%
hjobs = [Job({**spec_key(model), "networks": cfg["hessian_networks"], "seed": s, "input_shape": [1, 32, 32]})
         for s in ch.seeds]
hres = [a for a, _ in run_jobs(hjobs, oq.mixed_moments_job, **run)]
hk = [1, 4, 16, 64]
mixed_basis = [nads.top_eigenvectors(a["mixed"], max(hk))[1] for a in hres]
grad_basis = [gradient_nads(model, s).nads for s in ch.seeds]
hess_overlap = np.array([[nads.subspace_overlap(M_, G_, k) for k in hk] for M_, G_ in zip(mixed_basis, grad_basis)])
bases = {"gradient NADs": grad_basis[0], "mixed Hessian": mixed_basis[0]}
fig = nadplots.nad_grid(bases, indices=(0, 1, 2, 3), title=f"{model}: the two bases of Lemma 2 (seed {ch.seed})")
ch.figure_data("lemma2_bases", oq.nad_table(bases, (0, 1, 2, 3), seed=ch.seed))

# %%
fig = plots.overlap_vs_k({"mixed Hessian vs gradient NADs": (hk, hess_overlap)}, D,
                         title=f"{model}: overlap of the two bases of Lemma 2 (one line per seed)")
ch.figure_data("mixed_hessian_overlap", pd.DataFrame(
    [{"seed": s, "k": k, "overlap": hess_overlap[i, j], "chance": k / D}
     for i, s in enumerate(ch.seeds) for j, k in enumerate(hk)]))

# %% tags=["nbval-check-output"]
print(f"{model}: mixed Hessian from {cfg['hessian_networks']} networks, gradient NADs from {cfg['nad_networks']:,}")
print(pd.DataFrame({"k": hk, "overlap (mean over seeds)": hess_overlap.mean(0), "chance k/D": np.array(hk) / D})
      .to_string(index=False, float_format=lambda x: f"{x:.3f}"))
ch.claim("oq5-lenet-aligned", "Sec. 3: the NADs and the expected right singular vectors of the mixed Hessian "
         "are 'surprisingly aligned for most networks' (here LeNet).",
         Criterion("top-4 overlap of the mixed-Hessian basis with the gradient NADs", ">=", 0.5),
         values=hess_overlap[:, 1], trained=False,
         settings={"hessian_networks": cfg["hessian_networks"], "nad_networks": cfg["nad_networks"]});

# %% [markdown]
# Both estimates carry Monte Carlo noise, which lowers the measured overlap: chapter 2 showed how
# slowly single-point gradient NADs of LeNet converge, and a few dozen networks cannot pin down the
# mixed-Hessian basis either. So the table compares each overlap with chance ($k/D$) rather than
# with 1, and agreement is expected to fade at larger $k$, where neither estimate has converged.
# One network's mixed-Hessian Gram matrix costs as much as several hundred networks' gradients here;
# the paper, too, worked with the gradient covariance, which it found numerically more stable.

# %% [markdown]
# ## The margin quantity $\alpha(v)$
#
# The underspecification paper summarises the NAD picture in one formula (its eq. (2)): the
# accuracy of a network on $\mathcal{D}(v)$ is a monotonically increasing function of
#
# $$\alpha(v) = v^\top\, \mathbb{E}_\theta\big[\nabla_x f_\theta(x)\, \nabla_x f_\theta(x)^\top\big]\, v
#   = \sum_i \lambda_i\, (u_i^\top v)^2 .$$
#
# The maps of the first section give, per variant and seed, one accuracy per grid direction; the
# NADs computed there give $\alpha(v)$ for each direction, at initialisation and without training.
# The statement is about one network at a time, so the test is Spearman's rank correlation
# between $\alpha(v)$ and the accuracy *within* a network, per seed: for max-pool LeNet, the
# network both papers use, once with the gradient covariance exactly as eq. (2) writes it and once
# with the covariance the authors actually computed, their published secant NADs (step 100,
# 10,000 networks). Gradient scales differ between architectures, so for the figure $\alpha(v)$ is
# divided by the mean eigenvalue $\operatorname{tr} C / D$: 1 means "as sensitive as an average
# direction".
#
# ```{literalinclude} ../../nadcore/experiments/open_questions.py
# :pyobject: alpha
# ```

# %%
crit6 = {
    "oq6-alpha-gradient": Criterion("Spearman correlation of alpha(v) (gradient covariance) with the test "
                                    "accuracy of max-pool LeNet over the grid", ">=", 0.5),
    "oq6-alpha-secant": Criterion("Spearman correlation of alpha(v) (the authors' secant covariance) with the "
                                  "test accuracy of max-pool LeNet over the grid", ">=", 0.5),
}
cells = fourier_directions(grid).numpy().reshape(len(grid.frequencies), -1)
alphas = {label: oq.alpha(r.eigenvalues, r.nads, cells) for label, r in nad_sets.items()}
lenet_ref, lenet_ref_source = ch.nads("lenet", source=cfg["reference_nads"])
alphas["max-pool, " + cfg["reference_nads"]] = oq.alpha(lenet_ref.eigenvalues, lenet_ref.nads, cells)
accs = {label: maps[label.split(",")[0]]["test_acc"].reshape(len(ch.seeds), -1) for label in alphas}
fig = plots.alpha_scatter({label: (alphas[label], accs[label].mean(0)) for label in alphas},
                          title="Eq. (2) of the underspecification paper against the Fig.-1 maps")
ch.figure_data("alpha_vs_accuracy", pd.DataFrame(
    [{"nads": label, "seed": s, "k1": k1, "k2": k2, "alpha": alphas[label][c], "test_acc": accs[label][i, c]}
     for label in alphas for i, s in enumerate(ch.seeds) for c, (k1, k2) in enumerate(grid.frequencies)]))

# %% tags=["nbval-check-output"]
rho = {label: np.array([oq.spearman(alphas[label], a) for a in accs[label]]) for label in alphas}
pooled = [oq.spearman(np.concatenate([alphas[name] for name in nad_sets]),
                              np.concatenate([accs[name][i] for name in nad_sets])) for i in range(len(ch.seeds))]
print(f"secant NADs: {lenet_ref_source}")
print("Spearman rho(alpha, accuracy) within each network (mean over seeds):")
print(pd.Series({label: r.mean() for label, r in rho.items()}).round(3).to_string())
print(f"the four variants pooled (gradient alpha / mean eigenvalue): {np.mean(pooled):.3f}")
paper6 = ("Underspecification paper, eq. (2): a network's accuracy on D(v) is a monotonically increasing "
          "function of alpha(v) = v^T E[grad f grad f^T] v")
ch.claim("oq6-alpha-gradient", paper6 + " (alpha from the exact gradients, as written).", crit6["oq6-alpha-gradient"],
         values=rho["max-pool"], steps=steps, paper_steps=paper_steps)
ch.claim("oq6-alpha-secant", paper6 + " (alpha from the authors' secant NADs).", crit6["oq6-alpha-secant"],
         values=rho["max-pool, " + cfg["reference_nads"]], steps=steps, paper_steps=paper_steps);

# %% [markdown]
# Why the two covariances can disagree: the gradient of a max-pool network at one point is routed
# through the few winning pixels of each window, so its covariance over networks can be close to
# isotropic, and then $\alpha(v)$ is nearly the same for every Fourier direction and predicts
# nothing. The secant covariance of the authors' code is a finite difference across the network's
# whole nonlinear range and ranks directions by more than the local routing. The two claims
# say which of them orders the directions as the trained networks do; the pooled correlation over
# the four architectures is mostly carried by the differences between them.

# %% [markdown]
# ## What the answers add up to
#
# The verdicts of this run, question by question, computed from the intervals above:

# %%
from IPython.display import Markdown  # noqa: E402

Markdown(ch.verdict_summary(["oq1", "oq2", "oq3", "oq4", "oq5", "oq6"]))

# %% [markdown]
# ## Reproducibility

# %%
ch.finish(data=data.description["name"])
