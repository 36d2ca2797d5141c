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
# `nadcore/chapters/open_questions/claims.py`; the code is in `nadcore.chapters.open_questions.study`
# (one method per quantity) and `nadcore.chapters.open_questions.runs` (the experiments).

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (the papers' scale)
seed = 0  # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"  # "auto", "cpu" or "cuda"
model = "lenet"  # the network of questions 2, 3 and 5 (registry name or "mod:factory")
data_root = None  # folder of the official cifar-10-batches-py (None: the subset)
subset_root = None  # folder holding cifar10_subset.npz (None: default search)
knobs = None  # settings to override, e.g. {"grid_ticks": [0, 8, 16]} (dict or JSON)

# %%
import numpy as np
import pandas as pd

from nadcore.book import setup
from nadcore.chapters.open_questions import runs as oq
from nadcore.chapters.open_questions.study import Study

ch = setup("06_open_questions", profile=profile, seed=seed, device=device,
           knobs=knobs, model=model)
cfg = ch.cfg
study = Study(ch, model, data_root, subset_root)


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
print(study.variants_table().to_string(index=False))

# %% [markdown]
# ### Their NADs
#
# Chapter 2's exact-gradient estimator (`nad_networks` random networks at one Gaussian evaluation
# point): the gradient form of Lemma 2 and of the follow-up's eq. (2), and far cheaper than the
# authors' secant (2,048 forward passes per network) for four architectures.

# %%
nad_sets = study.variant_nads()
fig = study.draw_variant_nads(nad_sets)

# %%
fig = study.draw_variant_spectra(nad_sets)

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
maps = study.fig1_maps()
fig = study.draw_fig1_maps(maps)

# %% tags=["nbval-check-output", "near-chance"]
summ = study.map_summaries(maps)
print(oq.summary_frame(summ, maps).round(3).to_string())
ch.claim("oq1-maxpool-islands", **study.maxpool_islands(summ))
ch.claim("oq1-blur-removes-islands", **study.blur_removes_islands(summ))
ch.claim("oq1-blur-below-avg", **study.blur_below_avg(summ))
ch.claim("oq1-strided-islands", **study.strided_islands(summ))
ch.claim("oq1-strided-isotropic", **study.strided_isotropic(summ));

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
data = study.cifar_data()
print(data.summary())

# %%
basis, basis_source = study.reference_nads()
dv_res, cf_res = study.dynamics(basis, data)

# %%
tasks = study.tasks(dv_res, cf_res)
fig = study.draw_dynamics(tasks)

# %% [markdown]
# For $\mathcal{D}(v)$ two more curves: how much of the discriminative direction $v$ the network's
# first NADs capture, and how much their span overlaps the *architecture's* NADs.

# %%
fig = study.draw_dv_dynamics(tasks)

# %% tags=["nbval-check-output", "near-chance"]
print("means over seeds; the overlap at chance is k/D")
print(study.dynamics_summary(tasks)
      .to_string(index=False, float_format="{:.3f}".format))
ch.claim("oq2-dv-turns-to-v", **study.dv_turns_to_v(dv_res))
ch.claim("oq2-cifar-nads-persist", **study.cifar_nads_persist(cf_res, data));

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

# %% tags=["nbval-check-output", "near-chance"]
print(f"NADs removed: {basis_source}")
removal, energy, clean = study.removal(cf_res)
print(f"clean test accuracy (binary): {clean.mean():.3f} "
      f"(seeds: {', '.join(f'{c:.3f}' for c in clean)})")
print(study.removal_summary(removal, energy).to_string(float_format="{:.3f}".format))

# %%
fig = study.draw_removal(removal, energy, clean)

# %% tags=["nbval-check-output", "near-chance"]
k3 = 16
ch.claim("oq3-first-vs-last", **study.first_vs_last(cf_res, k3, basis, data))
ch.claim("oq3-beyond-energy", **study.beyond_energy(cf_res, k3, basis, data));

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
res_nads = study.skip_nads()
fig = study.draw_skip_nads(res_nads)

# %%
fig = study.draw_skip_spectra(res_nads)

# %% tags=["nbval-check-output"]
spectra = study.skip_spectra(res_nads)
skip_overlap, split_half = study.skip_overlap(res_nads), study.split_half(res_nads)
print(study.skip_spectrum_table(spectra).round(3).to_string())
print(study.skip_overlap_table(skip_overlap, split_half).round(3).to_string())
ch.claim("oq4-skip-high-frequency", **study.skip_high_frequency(spectra))
ch.claim("oq4-skip-changes-nads", **study.skip_changes_nads(skip_overlap, split_half));

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
check = study.linear_pooling_check()
print(f"D = {cfg['linear_D']}, S = {cfg['linear_S']}, "
      f"(sigma_theta, sigma_phi) = {tuple(cfg['linear_sigmas'])}")
print("eqs. (4)-(5) vs the exact Gaussian averages: largest relative difference "
      f"< 1e-12: {check['exact'] < 1e-12}")
print(f"eqs. (4)-(5) vs {cfg['linear_draws']} Monte Carlo draws: "
      f"largest relative difference {check['monte_carlo']:.3f}")
print("E[J^T J] / E[g g^T] on the diagonal where m != 0: "
      f"{check['ratio'][0]:.4f} .. {check['ratio'][1]:.4f} (closed form "
      f"(s_theta^2 + s_phi^2) / (s_theta^2 s_phi^2) = {check['ratio_closed']:.4f})")
ch.claim("oq5-eq4-eq5-exact", **study.eq4_eq5_exact(check))
ch.claim("oq5-eq4-eq5-monte-carlo", **study.eq4_eq5_monte_carlo(check));

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
mixed_basis = study.mixed_hessian_bases()
grad_basis = study.gradient_bases()
hess_overlap = study.lemma2_overlap(mixed_basis, grad_basis)
fig = study.draw_lemma2_bases(mixed_basis, grad_basis)

# %%
fig = study.draw_lemma2_overlap(hess_overlap)

# %% tags=["nbval-check-output"]
print(f"{model}: mixed Hessian from {cfg['hessian_networks']} networks, "
      f"gradient NADs from {cfg['nad_networks']:,}")
print(study.lemma2_overlap_table(hess_overlap)
      .to_string(index=False, float_format="{:.3f}".format))
ch.claim("oq5-lenet-aligned",
         **study.lenet_aligned(hess_overlap, mixed_basis, grad_basis));

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
stability = study.stability_table(k=4)
print(stability.round(3).to_string())

# %%
ch.claim("oq5-gradient-more-stable",
         **study.gradient_more_stable(stability, mixed_basis, k=4))

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
lenet_ref, lenet_ref_source = ch.nads("lenet", source=cfg["reference_nads"])
alphas = study.alphas(nad_sets, lenet_ref)
accs = study.alpha_accuracies(alphas, maps)
fig = study.draw_alpha(alphas, accs)

# %% tags=["nbval-check-output", "near-chance"]
rho = study.alpha_rho(alphas, accs)
pooled = study.pooled_rho(alphas, accs, nad_sets)
print(f"secant NADs: {lenet_ref_source}")
print("Spearman rho(alpha, accuracy) within each network (mean over seeds):")
print(pd.Series({label: r.mean() for label, r in rho.items()}).round(3).to_string())
print("the four variants pooled (gradient alpha / mean eigenvalue): "
      f"{np.mean(pooled):.3f}")
ch.claim("oq6-alpha-gradient", **study.alpha_gradient(rho, maps))
ch.claim("oq6-alpha-secant", **study.alpha_secant(rho, lenet_ref, maps));

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
