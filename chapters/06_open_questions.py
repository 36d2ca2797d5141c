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
# asked for experiments the paper did not contain, and the paper states a piece of theory
# (Sec. 3) that its main text does not test quantitatively. This chapter answers six of these open
# questions with data, at the scale a laptop affords:
#
# 1. **Pooling or other downsampling?** Review 4: would a network that downsamples by striding,
#    like the All Convolutional Net {cite:p}`springenberg2015allconv`, be free of the directional
#    bias? Four LeNet-sized networks differ only in how they halve their feature maps, including
#    the anti-aliased blur-pool of {cite:t}`zhang2019shiftinvariant`.
# 2. **NADs during training.** Review 2: how do NADs change while a network trains?
# 3. **Do trained CNNs use NAD directions?** Review 3 doubted it. We remove the components of test
#    images along the first, the last and random directions and see what a trained LeNet loses.
# 4. **Skip connections.** Review 2: how do NADs change with residual connections
#    {cite:p}`he2016resnet`?
# 5. **NADs and the mixed Hessian.** Sec. 3's Lemma 2 bounds how fast a network separates a
#    dipole by the gradient covariance and the Gram matrix of the mixed Hessian
#    $\partial^2 f / \partial\theta\,\partial x$, whose eigenbases it calls "surprisingly aligned
#    for most networks". We check its worked example exactly and measure the alignment for LeNet.
# 6. **The alignment $\alpha(v)$.** The follow-up paper
#    {cite:p}`ortizjimenez2021underspecification` (eq. (2)) states that the accuracy on
#    $\mathcal{D}(v)$ is a monotonically increasing function of
#    $\alpha(v) = v^\top \mathbb{E}_\theta[\nabla_x f \nabla_x f^\top] v$.
#
# Every claim is registered with its kind (a reviewer's question, a statement of the papers, or
# the book's own prediction from their theory), source and criterion in
# `nadcore/chapters/open_questions/claims.py`; the code is in `nadcore.chapters.open_questions.runs`.

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
from nadcore.book import setup
from nadcore.book.evidence import accuracy_interval, exact_value, fisher_interval
from nadcore.data import cifar, fourier_basis_vector, fourier_directions
from nadcore.book.runner import Job, run_jobs
from nadcore.chapters.open_questions import runs as oq
from nadcore.book.nad_jobs import cached_nads
from nadcore.chapters.linear_separability.runs import grid_sweep, steps_per_run
from nadcore.nets import build_model, spec_key
from nadcore.chapters.nads import figures as nadplots
from nadcore.chapters.open_questions import figures as plots
from nadcore.runtime import generator

ch = setup("06_open_questions", profile=profile, seed=seed, device=device, knobs=knobs, model=model)
cfg = ch.cfg
run = dict(executor=ch.executor(), cache=ch.cache)
D = 32 * 32


def gradient_nads(spec, s, n=cfg["nad_networks"]):
    """Gradient NADs of a one-channel ``spec``: ``n`` networks of seed ``s`` (cached)."""
    return cached_nads(spec, "gradient", n, seed=s, device=ch.device, cache=ch.cache)


# %% [markdown]
# ## Pooling against other downsampling
#
# Chapter 1 explains why pooling singles out directions: a subsampling layer is a prefilter
# followed by keeping one sample in $S$, which folds the $S$ frequencies $\ell, \ell + M, \dots$
# onto one output frequency, and the prefilter decides what survives (Theorem 1). For the ways a
# CNN can halve its feature maps this predicts:
#
# * **strided convolution**: no low-pass prefilter, so high frequencies fold onto low ones almost
#   unattenuated and directions far from the centre of a Fig.-1 map become learnable: *islands*;
# * **average pooling**: a $2 \times 2$ box, a poor low-pass filter: some aliasing;
# * **blur-pool**: $[1, 2, 1]^\top [1, 2, 1] / 16$ before subsampling, which attenuates high
#   frequencies far more than the box: no islands;
# * **max-pooling** (LeNet as published) is nonlinear; the theory says nothing precise about it.
#
# The four networks have LeNet's layers and feature-map sizes and differ only in this operation:
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
# Chapter 2's exact-gradient estimator (`nad_networks` random networks at one Gaussian evaluation
# point): the gradient form of Lemma 2 and of the follow-up's eq. (2), and far cheaper than the
# authors' secant (2,048 forward passes per network) for four architectures.

# %%
nad_sets = {label: gradient_nads(spec, ch.seed) for label, spec in cfg["variants"].items()}
fig = nadplots.nad_grid(nad_sets, indices=(0, 1, 2, 3),
                        title=f"First gradient NADs of the LeNet variants (seed {ch.seed})")
ch.figure_data("nads_variants", oq.nad_table(nad_sets, (0, 1, 2, 3), seed=ch.seed))

# %%
fig = nadplots.spectra(nad_sets, title="Normalised eigenvalues of the gradient covariance")
ch.figure_data("nad_spectra", oq.spectra_table({k: [r] for k, r in nad_sets.items()}, [ch.seed]))

# %% [markdown]
# ### Fig.-1 maps
#
# Each variant is trained on $\mathcal{D}(v)$ for every Fourier direction $v$ of a coarse grid,
# with the authors' LeNet recipe (SGD, learning rate decaying linearly from 0.5, gradient clipping
# 0.5, one output with the logistic loss). We study the quadrant $k_1, k_2 \ge 0$ of the map: the
# constant direction sits in the bottom-left corner, the highest frequency $(16, 16)$ in the
# top-right one. Transposing every image of $\mathcal{D}(v(k_1, k_2))$ gives
# $\mathcal{D}(v(k_2, k_1))$, and all four networks (square kernels and windows, i.i.d. weights)
# are as likely to start from a transposed network as from the original, so cell $(k_2, k_1)$ is
# the same experiment as $(k_1, k_2)$: we train only $k_1 \le k_2$ and mirror the runs
# (`transpose_symmetric`), about 40% less training. The `cpu` profile uses a stride-4 grid and an
# easier $\mathcal{D}(v)$ ($\sigma = 1$, 1,200 samples, 10 epochs, batches of 32) so that short runs
# learn something; the `paper` profile restores the paper's settings on a stride-2 grid.
#
# An *island* is a cell with $\max(k_1, k_2) \ge$ `off_centre` whose accuracy reaches `island`.

# %%
grid = oq.quadrant_grid(cfg["grid_ticks"])
dv_settings = {**cfg["dv"], **cfg["dv_train"]}
maps = {label: grid_sweep(spec, grid, dv_settings, seeds=ch.seeds, chunk=cfg["chunk"], device=str(ch.device),
                          transpose_symmetric=True, **run)
        for label, spec in cfg["variants"].items()}
fig = plots.quadrant_maps({label: r["test_acc"].mean(0) for label, r in maps.items()}, grid,
                          title=f"Test accuracy on D(v), v a Fourier direction ({profile} profile)")
ch.figure_data("fig1_maps", oq.map_table(maps, grid, ch.seeds))

# %% tags=["nbval-check-output"]
summ = {label: oq.map_summary(r["test_acc"], grid, cfg["off_centre"], cfg["island"]) for label, r in maps.items()}
print(oq.summary_frame(summ, maps).round(3).to_string())
learned = {label: bool(s["learned"].all()) for label, s in summ.items()}
budget = dict(steps=steps_per_run(dv_settings),
              paper_steps=steps_per_run({**ch.paper_cfg["dv"], **ch.paper_cfg["dv_train"]}))
mp, blur, avg, strided = (summ[k] for k in ("max-pool", "blur-pool", "average pool", "strided conv"))
ch.claim("oq1-maxpool-islands", values=mp["islands"], **budget,
         preconditions={"max-pool learned some direction in every seed": learned["max-pool"]})
ch.claim("oq1-blur-removes-islands", values=blur["islands"], **budget,
         preconditions={"max-pool has islands to remove (mean share >= 0.05)":
                        bool(mp["islands"].mean() >= 0.05),
                        "blur-pool learned some direction in every seed": learned["blur-pool"]})
ch.claim("oq1-blur-below-avg", values=blur["off_centre"] - avg["off_centre"], **budget)
ch.claim("oq1-strided-islands", values=strided["islands"] - mp["islands"], **budget,
         preconditions={"both networks learned some direction": learned["strided conv"] and learned["max-pool"]})
ch.claim("oq1-strided-isotropic", values=strided["gap"], **budget,
         preconditions={"the strided network learned some direction": learned["strided conv"]});

# %% [markdown]
# The claims test what the theory leads us to expect: islands for max-pooling, none for blur-pool,
# average pooling in between, and for the strided network a map that no longer depends on the
# frequency (the reviewer's "free of this effect"). Two caveats: a strided network can fail in
# every direction alike, uniformly but uniformly badly (hence the precondition that it learned
# some direction); and all variants use max-pool LeNet's learning rate, while a network whose
# prefilter attenuates its input also trains more slowly (Lemma 1).

# %% [markdown]
# ## NADs during training
#
# The paper's NADs belong to an *architecture*: eigenvectors of $\mathbb{E}_\theta[\nabla_x f\,
# \nabla_x f^\top]$, an average over random initialisations at one input. A trained network is a
# single $\theta$, and training a thousand networks per epoch is out of reach, so we define the
# **NADs of one network** by averaging over its *inputs* instead,
#
# $$C(\theta) = \mathbb{E}_{x}\big[\nabla_x f_\theta(x)\, \nabla_x f_\theta(x)^\top\big],$$
#
# over the first `eval_points` test inputs of the task ($f_\theta$: the single output). Its
# eigenvectors say which input directions move this network's decision; the same inputs at every
# epoch make the epochs comparable, and each seed gives an independent trajectory.
#
# ```{literalinclude} ../../nadcore/nads/trained.py
# :pyobject: network_nads
# ```
#
# Two tasks: $\mathcal{D}(v)$ with $v$ the Fourier direction `dynamics_direction`, and binary
# CIFAR-10 (the follow-up's split, airplane to deer against dog to truck; $D = 3{,}072$). We follow
# the overlap $\lVert U_k(t)\, U_k(0)^\top \rVert_F^2 / k$ of the top-$k$ NADs at epoch $t$ with
# those at epoch 0 (1 = the same subspace, $k/D$ = chance), and for $\mathcal{D}(v)$ the share of
# $v$ in the first NADs and their overlap with the architecture's NADs (`reference_nads`).

# %% tags=["nbval-check-output"]
ks = cfg["overlap_ks"]
v = fourier_basis_vector(*cfg["dynamics_direction"]).numpy()
data = cifar.load_cifar10(data_root, subset_root, max_train=cfg["max_train"], max_test=cfg["max_test"])
print(data.summary())

# %%
basis, basis_source = ch.nads(model, source=cfg["reference_nads"])
U = nads.complete_basis(basis.nads)
reference = U[: max(ks)]
dv_jobs, cifar_jobs = oq.dynamics_jobs(model, ch.seeds, cfg, v, reference, U, data, device=str(ch.device),
                                       data_spec={"root": data_root, "subset_root": subset_root,
                                                  "max_train": cfg["max_train"], "max_test": cfg["max_test"]})
dv_res = [a for a, _ in run_jobs(dv_jobs, oq.dv_dynamics_job, **run)]
cf_res = [a for a, _ in run_jobs(cifar_jobs, oq.cifar_dynamics_job, **run)]

# %%
stack = lambda res, key: np.stack([a[key] for a in res])  # noqa: E731  (seeds, epochs + 1, ...)
tasks = {f"D(v), v = Fourier {tuple(cfg['dynamics_direction'])}": dv_res, "binary CIFAR-10": cf_res}
dims = {name: d for name, d in zip(tasks, (D, 3 * D))}
fig = plots.dynamics_curves({name: stack(res, "overlap_initial") for name, res in tasks.items()}, ks,
                            chance={name: [k / dims[name] for k in ks] for name in tasks},
                            ylabel="overlap with the initial NADs",
                            title="How far the network's NADs move from those at initialisation")
ch.figure_data("nads_during_training", oq.dynamics_table(tasks, ch.seeds, ks))

# %% [markdown]
# For $\mathcal{D}(v)$ two more curves: how much of the discriminative direction $v$ the network's
# first NADs capture, and how much their span overlaps the *architecture's* NADs.

# %%
fig = plots.dynamics_curves({"share of v in the top-k NADs": stack(dv_res, "captured_v"),
                             "overlap with the architecture's NADs": stack(dv_res, "overlap_reference")},
                            ks, chance=[k / D for k in ks], ylabel="share / overlap", title=next(iter(tasks)))

# %% tags=["nbval-check-output"]
print("means over seeds; the overlap at chance is k/D")
print(oq.dynamics_summary(tasks, ks).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
n_cifar = data.description["n_train"]
cifar_budget = dict(steps=steps_per_run({**cfg["cifar_train"], "n_train": n_cifar}),
                    paper_steps=steps_per_run({**ch.paper_cfg["cifar_train"], "n_train": 50000}))
ch.claim("oq2-dv-turns-to-v", values=stack(dv_res, "captured_v")[:, -1, 0], **budget,
         preconditions={"D(v) learned (test accuracy >= 0.6 for every seed)":
                        bool(stack(dv_res, "test_acc")[:, -1].min() >= 0.6)})
ch.claim("oq2-cifar-nads-persist", values=stack(cf_res, "overlap_initial")[:, -1, -1], **cifar_budget,
         k_max=max(ks), preconditions={"the network learned (test accuracy >= 0.55 for every seed)":
                                       bool(stack(cf_res, "test_acc")[:, -1].min() >= 0.55)});

# %% [markdown]
# How to read the curves: an overlap near 1 makes the NADs at initialisation a lasting property of
# the trained network; one that falls towards $k/D$ means its sensitivity leaves its initial
# subspace. On $\mathcal{D}(v)$ any movement should point towards $v$, the only direction the task
# rewards. One network's sensitivity need not share much with the architecture's NADs, which
# summarise many networks and describe where training *starts* (chapters 3 and 4).

# %% [markdown]
# ## Do trained CNNs use the NAD directions of real images?
#
# Review 3 proposed the direct test: remove the components of test images along NADs. For the
# trained CIFAR-10 networks above and the NADs of the chapter's model (per colour channel, as in
# chapter 4), we project out the **first $k$ NADs**, the **last $k$**, **$k$ random directions**,
# and the **first $k$ principal directions of the training images**, a control for "the first NADs
# are smooth, so removing them removes a lot of image".

# %% tags=["nbval-check-output"]
print(f"NADs removed: {basis_source}")
removal, energy, clean = (stack(cf_res, k) for k in ("removal_acc", "removal_energy", "clean_acc"))
rk = cfg["removal_ks"]
print(f"clean test accuracy (binary): {clean.mean():.3f} (seeds: {', '.join(f'{c:.3f}' for c in clean)})")
print(oq.removal_summary(removal, energy, rk).to_string(float_format=lambda x: f"{x:.3f}"))

# %%
fig = plots.removal_curves(rk, {n: removal[:, i] for i, n in enumerate(oq.REMOVALS)},
                           {n: energy[:, i] for i, n in enumerate(oq.REMOVALS)}, clean,
                           title=f"Trained {model} on binary CIFAR-10: removing directions from the test images")
ch.figure_data("removal", oq.removal_table(removal, energy, ch.seeds, rk))

# %% tags=["nbval-check-output"]
k3 = 16
first, last, pcs = (removal[:, oq.REMOVALS.index(n), rk.index(k3)] for n in ("first NADs", "last NADs", "data PCs"))
n_test = data.description["n_test"]
above = {"the trained network beats chance (clean accuracy >= 0.55 for every seed)": bool(clean.min() >= 0.55)}
ch.claim("oq3-first-vs-last", interval=accuracy_interval(last - first, n_test, difference=True), **cifar_budget,
         networks=basis.meta.get("networks"), k_removed=k3, preconditions=above)
ch.claim("oq3-beyond-energy", interval=accuracy_interval(pcs - first, n_test, difference=True), **cifar_budget,
         networks=basis.meta.get("networks"), k_removed=k3, preconditions=above);

# %% [markdown]
# The table gives the share of the images' energy each removal takes away beside the accuracy it
# leaves. The principal directions are the harder control: by construction they remove at least as
# much energy as the same number of any other directions. If the accuracy drops more when the
# first NADs go than when they do (the second claim), the network depends on these particular
# directions and not merely on how much of the image is gone.

# %% [markdown]
# ## Skip connections
#
# Review 2 asked how NADs change with residual connections. We take a narrow residual network
# (width 8, a 3x3 stem, two basic blocks, the second halving the resolution with a 1x1 strided
# projection on its shortcut, then a 4x4 average pool and a linear layer, no batch norm) and the
# same network with both shortcuts removed, a plain five-layer CNN.
#
# ```{literalinclude} ../../nadcore/nets/variants.py
# :pyobject: ResidualNet.forward
# ```
#
# A prediction from the aliasing picture: with the skips, the input reaches the head through a 1x1
# convolution with stride 2, a subsampling without prefilter, so the gradients should put more of
# their energy at high frequencies. We measure the share of $\mathbb{E}\lVert\nabla_x f\rVert^2$
# within Fourier radius 8, and the overlap of the two networks' NADs against Monte Carlo noise: the
# split-half overlap of one network's NADs (two estimates from disjoint halves of its networks).

# %%
N4 = cfg["skip_nad_networks"]
res_nads = {label: [gradient_nads(spec, s, N4) for s in ch.seeds] for label, spec in cfg["resnets"].items()}
firsts = {label: r[0] for label, r in res_nads.items()}
fig = nadplots.nad_grid(firsts, indices=(0, 1, 2, 3),
                        title=f"First gradient NADs with and without skip connections (seed {ch.seed})")
ch.figure_data("nads_skip", oq.nad_table(firsts, (0, 1, 2, 3), seed=ch.seed))

# %%
fig = nadplots.spectra(firsts, title="Normalised NAD spectra with and without skip connections")
ch.figure_data("skip_spectra", oq.spectra_table(res_nads, ch.seeds, name="network"))

# %% tags=["nbval-check-output"]
labels = list(cfg["resnets"])
spec_rows = pd.DataFrame([{"network": label, "seed": s, **oq.spectrum_summary(r.eigenvalues, r.nads)}
                          for label, rs in res_nads.items() for s, r in zip(ch.seeds, rs)])
skip_overlap = np.array([[nads.subspace_overlap(a.nads, b.nads, k) for k in nads.OVERLAP_KS]
                         for a, b in zip(*res_nads.values())])
split_half = {label: np.array([r.extras["split_half"] for r in rs]) for label, rs in res_nads.items()}
print(spec_rows.groupby("network")[["top_k", "low_frequency", "first_low"]].mean()
      .rename(columns={"top_k": "share in top 16", "low_frequency": "low-frequency share",
                       "first_low": "NAD 0 low-frequency share"}).round(3).to_string())
print(pd.DataFrame({"with vs without skips": skip_overlap.mean(0),
                    **{f"split-half, {label}": sh.mean(0) for label, sh in split_half.items()},
                    "chance k/D": np.array(nads.OVERLAP_KS) / D},
                   index=[f"k={k}" for k in nads.OVERLAP_KS]).T.round(3).to_string())
low = {label: spec_rows.loc[spec_rows["network"] == label, "low_frequency"].to_numpy() for label in labels}
ch.claim("oq4-skip-high-frequency", values=low[labels[0]] - low[labels[1]], trained=False, networks=N4)
ch.claim("oq4-skip-changes-nads", values=skip_overlap[:, 2] - split_half[labels[0]][:, 2], trained=False,
         networks=N4, settings={"skip_nad_networks": N4});

# %% [markdown]
# The two claims are separate questions: whether the skips change the NADs at all (beyond Monte
# Carlo noise), and whether they change them the way the aliasing argument suggests. One can hold
# without the other.

# %% [markdown]
# ## NADs and the mixed Hessian (the paper's Sec. 3)
#
# Lemma 2 of the paper bounds how fast a network can learn to separate a discriminative dipole
# $(x, x + v)$ by two quadratic forms in $v$,
#
# $$v^\top\, \mathbb{E}_\theta\big[\nabla_x f\, \nabla_x f^\top\big]\, v
#   \qquad\text{and}\qquad
#   v^\top\, \mathbb{E}_\theta\big[J^\top J\big]\, v, \quad J = \frac{\partial^2 f}{\partial\theta\,\partial x},$$
#
# so the NADs (eigenvectors of the first) and the expected right singular vectors of the mixed
# Hessian (eigenvectors of the second) both rank directions. For chapter 1's deep linear model of
# pooling, $f(x) = \theta^\top A(m \odot \phi \odot x)$ with $A = \frac1S[I_M \cdots I_M]$,
# $\theta \sim \mathcal{N}(0, \sigma_\theta^2 I_M)$ and $\phi \sim \mathcal{N}(0, \sigma_\phi^2 I_D)$,
# the paper works both out (eqs. (4)-(5)). With our normalisation of $A$:
#
# $$\mathbb{E}\big[\nabla_x f \nabla_x f^\top\big] = \frac{\sigma_\theta^2\sigma_\phi^2}{S^2}
#   \operatorname{diag}(m^2), \qquad
#   \mathbb{E}\big[J^\top J\big] = \frac{\sigma_\theta^2 + \sigma_\phi^2}{S^2}\operatorname{diag}(m^2).$$
#
# Both are diagonal with the same ordering, so the two bases coincide: the canonical basis sorted
# by $m^2$ ($\nabla_x f = (A^\top\theta) \odot m \odot \phi$, and $J$ stacks
# $\operatorname{diag}((A^\top\theta) \odot m)$ and $A \operatorname{diag}(m \odot \phi)$). The
# paper's powers of $S$ differ from ours; they depend on how $A$ is normalised and do not change
# the eigenvectors.
#
# **An exact check.** The output is bilinear in $(\theta, \phi)$, so Gaussian averages reduce to
# sums over basis vectors, which `nadcore.nads.mixed_hessian.linear_pooling_moments` evaluates by
# automatic differentiation with the mixed-Hessian code that serves LeNet below; a Monte Carlo
# average over random parameters checks the same code path once more.

# %% tags=["nbval-check-output"]
check = oq.linear_pooling_check(cfg["linear_D"], cfg["linear_S"], cfg["linear_sigmas"], cfg["linear_draws"],
                                generator(seed, 61))
print(f"D = {cfg['linear_D']}, S = {cfg['linear_S']}, (sigma_theta, sigma_phi) = {tuple(cfg['linear_sigmas'])}")
print(f"eqs. (4)-(5) vs the exact Gaussian averages: largest relative difference < 1e-12: {check['exact'] < 1e-12}")
print(f"eqs. (4)-(5) vs {cfg['linear_draws']} Monte Carlo draws: largest relative difference "
      f"{check['monte_carlo']:.3f}")
print(f"E[J^T J] / E[g g^T] on the diagonal where m != 0: {check['ratio'][0]:.4f} .. {check['ratio'][1]:.4f} "
      f"(closed form (s_theta^2 + s_phi^2) / (s_theta^2 s_phi^2) = {check['ratio_closed']:.4f})")
ch.claim("oq5-eq4-eq5-exact", interval=exact_value(check["exact"], "exact (autograd sums over basis vectors)"))
ch.claim("oq5-eq4-eq5-monte-carlo", interval=exact_value(check["monte_carlo"], "Monte Carlo average"),
         mc_tolerance=round(12 / np.sqrt(cfg["linear_draws"]), 4), settings={"linear_draws": cfg["linear_draws"]});

# %% [markdown]
# **LeNet.** For a real network neither matrix has a closed form. The gradient NADs come from
# chapter 2's estimator. The mixed-Hessian Gram $\frac1N\sum_n J_n^\top J_n$ comes from
# `hessian_networks` networks: $Jw$ is a forward-mode derivative of $\nabla_\theta f$ along the
# input direction $w$ and $J^\top u$ a reverse-mode one, so $J^\top J w$ costs two passes and no
# Hessian is ever formed; applied to the columns of the identity it gives the $D \times D$ matrix.
# The networks and the evaluation point are those of the gradient NADs of the same seed.
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
ch.figure_data("mixed_hessian_overlap", oq.overlap_table(hess_overlap, ch.seeds, hk, D))

# %% tags=["nbval-check-output"]
print(f"{model}: mixed Hessian from {cfg['hessian_networks']} networks, gradient NADs from {cfg['nad_networks']:,}")
print(pd.DataFrame({"k": hk, "overlap (mean over seeds)": hess_overlap.mean(0), "chance k/D": np.array(hk) / D})
      .to_string(index=False, float_format=lambda x: f"{x:.3f}"))
ch.claim("oq5-lenet-aligned", values=hess_overlap[:, 1], trained=False, networks=cfg["hessian_networks"],
         paper_networks=ch.paper_cfg["hessian_networks"],
         settings={"hessian_networks": cfg["hessian_networks"], "nad_networks": cfg["nad_networks"]});

# %% [markdown]
# Both estimates carry Monte Carlo noise, which lowers the measured overlap, so the table compares
# each overlap with chance ($k/D$) as well as with 1. The paper gives no network count for the
# mixed Hessian, so the claim's share of networks counts against the `paper` profile's
# `hessian_networks`.
#
# The paper prefers the gradient covariance because it is "numerically more stable". Stable here
# means that two estimates from independent networks agree: for each seed, a second estimate of
# both bases from as many networks of another seed, and the overlap of the two estimates' top
# four directions, for the gradient covariance and for the mixed Hessian alike.

# %% tags=["nbval-check-output"]
stability = oq.stability_table(model, cfg["hessian_networks"], ch.seeds, k=4, **run)
print(stability.round(3).to_string())

# %%
ch.claim("oq5-gradient-more-stable", trained=False, networks=cfg["hessian_networks"],
         values=stability["gradient"] - stability["mixed Hessian"],
         paper_networks=ch.paper_cfg["hessian_networks"],
         settings={"hessian_networks": cfg["hessian_networks"], "k": 4})

# %% [markdown]
# ## The alignment $\alpha(v)$
#
# The underspecification paper summarises the NAD picture in one sentence (its eq. (2)): the
# performance of a network on $\mathcal{D}(v)$ is a monotonically increasing function of
#
# $$\alpha(v) = v^\top\, \mathbb{E}_\theta\big[\nabla_x f_\theta(x)\, \nabla_x f_\theta(x)^\top\big]\, v
#   = \sum_i \lambda_i\, (u_i^\top v)^2 .$$
#
# The maps above give one accuracy per grid direction, the NADs computed there $\alpha(v)$. A
# monotonically increasing function has rank correlation 1 with its argument, so the test is
# Spearman's correlation between $\alpha(v)$ and max-pool LeNet's accuracy over the grid, per seed:
# with the gradient covariance as eq. (2) writes it, and with the one the authors computed (their
# published secant NADs, 10,000 networks). The figure divides $\alpha(v)$ by $\operatorname{tr} C / D$.
#
# ```{literalinclude} ../../nadcore/chapters/open_questions/runs.py
# :pyobject: alpha
# ```

# %%
cells = fourier_directions(grid).numpy().reshape(len(grid.frequencies), -1)
alphas = {label: oq.alpha(r.eigenvalues, r.nads, cells) for label, r in nad_sets.items()}
lenet_ref, lenet_ref_source = ch.nads("lenet", source=cfg["reference_nads"])
alphas["max-pool, " + cfg["reference_nads"]] = oq.alpha(lenet_ref.eigenvalues, lenet_ref.nads, cells)
accs = {label: maps[label.split(",")[0]]["test_acc"].reshape(len(ch.seeds), -1) for label in alphas}
fig = plots.alpha_scatter({label: (alphas[label], accs[label].mean(0)) for label in alphas},
                          title="Eq. (2) of the underspecification paper against the Fig.-1 maps")
ch.figure_data("alpha_vs_accuracy", oq.alpha_table(alphas, accs, ch.seeds, grid))

# %% tags=["nbval-check-output"]
rho = {label: np.array([oq.spearman(alphas[label], a) for a in accs[label]]) for label in alphas}
pooled = [oq.spearman(np.concatenate([alphas[name] for name in nad_sets]),
                      np.concatenate([accs[name][i] for name in nad_sets])) for i in range(len(ch.seeds))]
print(f"secant NADs: {lenet_ref_source}")
print("Spearman rho(alpha, accuracy) within each network (mean over seeds):")
print(pd.Series({label: r.mean() for label, r in rho.items()}).round(3).to_string())
print(f"the four variants pooled (gradient alpha / mean eigenvalue): {np.mean(pooled):.3f}")
n_cells = len(grid.frequencies)
ch.claim("oq6-alpha-gradient", interval=fisher_interval(rho["max-pool"]), **budget, cells=n_cells,
         networks=cfg["nad_networks"])
ch.claim("oq6-alpha-secant", interval=fisher_interval(rho["max-pool, " + cfg["reference_nads"]]), **budget,
         cells=n_cells, networks=lenet_ref.meta.get("networks"));

# %% [markdown]
# Why the two covariances can disagree: the gradient of a max-pool network at one point is routed
# through the few winning pixels of each window, so its covariance over networks can be close to
# isotropic, and then $\alpha(v)$ barely distinguishes Fourier directions. The secant covariance is
# a finite difference across the network's whole nonlinear range. The pooled correlation over the
# four architectures is mostly carried by the differences between them.

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
