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
# # Computing NADs
#
# Chapter 1 showed that a single pooling layer already prefers some discriminative directions
# over others. Real architectures stack many such layers, and their preferences cannot be written
# down by hand. Ortiz-Jimenez et al. (NeurIPS 2020, Sec. 3) proposed to *measure* them at
# initialisation, without any training data. This chapter derives the estimator, computes the
# neural anisotropy directions (NADs) of five architectures, and then looks hard at a detail
# of the original code that changes the answer: the "gradient" there is a finite difference with
# step 100.
#
# ## From a dipole to a covariance
#
# Consider the smallest discriminative task there is: two points, $(x, +1)$ and $(x + v, -1)$,
# a *discriminative dipole* along $v$. A network $f_\theta$ separates it confidently when
# $q_\theta(v) = g(|f_\theta(x) - f_\theta(x+v)|)$ is large for an increasing $g$. To first order,
# $f_\theta(x+v) - f_\theta(x) \approx v^\top \nabla_x f_\theta(x)$, so for $g(t) = t^2$
#
# $$ q_\theta(v) \approx \left(v^\top \nabla_x f_\theta(x)\right)^2 . $$
#
# How much of the parameter space already solves the dipole? Markov's inequality bounds the
# probability, over random initialisations, of reaching a dipole score $\eta$ (paper eq. (6)):
#
# $$ P\left(q_\theta(v) \ge \eta\right) \lesssim
#    \frac{v^\top \, \mathbb{E}_\theta\!\left[\nabla_x f_\theta(x) \nabla_x f_\theta(x)^\top\right] v}{\eta}. $$
#
# Directions along which the *gradient covariance*
# $C = \mathbb{E}_\theta[\nabla_x f_\theta(x)\nabla_x f_\theta(x)^\top]$ is small are directions in
# which few networks discriminate at all: the architecture is biased against them. The paper's
# Lemma 2 makes the same point for the speed of learning a dipole: its bound (eq. (3))
# follows from the Cauchy-Schwarz inequality, so no measurement can contradict it, and what it
# suggests, that the NADs align with the expected right singular vectors of the mixed Hessian
# $\nabla^2_{\theta, x} f_\theta(x)$, is tested in the open questions chapter. The NADs are the
# eigenvectors $u_1, u_2, \dots$ of $C$, ordered by decreasing eigenvalue. For the deep linear
# model of pooling in chapter 1, $C = \sigma_\varphi^2 \sigma_\theta^2 \operatorname{diag}(m^2)$ (paper
# eq. (4)): the NADs are Fourier vectors sorted by the pooling prefilter, which is what
# chapter 1's Theorem 1 and Lemma 1 predicted.
#
# ## Estimating $C$ by Monte Carlo
#
# For a CNN, $C$ has no closed form. We draw $N$ independent initialisations (PyTorch's
# default initialisation, eval mode, one scalar output), evaluate the input sensitivity $g_n$ of
# each at one fixed point $x \sim \mathcal{N}(0, I)$, and accumulate
# $\hat C = \frac{1}{N}\sum_n g_n g_n^\top$ in float64 (`nadcore.nads.compute_nads`). Two
# estimators of $g_n$ are implemented side by side:
#
# * **secant** (the authors' code): $g_i = \big(f(x + h e_i) - f(x - h e_i)\big) / 2h$ along every
#   pixel with $h = 100$: 2,048 forward passes per network on 32x32 inputs. The inputs have unit
#   scale, so a step of 100 measures the slope of a secant across the whole nonlinear range of the
#   network, not a derivative.
# * **gradient**: the exact $\nabla_x f_\theta(x)$ by automatic differentiation, the paper's
#   written definition, one backward pass per network.
#
# The two coincide for a linear model and differ for everything else. Here is the secant, as
# `nadcore` computes it for one network (the batched paths used for speed give the same numbers,
# as the tests check):
#
# ```{literalinclude} ../../nadcore/nads/estimators.py
# :pyobject: input_sensitivity_secant
# ```
#
# and the exact gradient:
#
# ```{literalinclude} ../../nadcore/nads/estimators.py
# :pyobject: input_gradient
# ```
#
# The NADs are then the eigenvectors of the accumulated second moment $\frac1N \sum_n g_n
# g_n^\top$, in order of decreasing eigenvalue:
#
# ```{literalinclude} ../../nadcore/nads/covariance.py
# :pyobject: top_eigenvectors
# ```
#
# The accumulation keeps the networks in eight groups (network index modulo 8). Two half
# estimates (even and odd networks) tell whether $N$ is large enough: their top-$k$ subspaces
# agree once the estimate has converged. Leaving out one group at a time gives a jackknife
# standard error for any statistic of the NADs (`nadcore.nads.jackknife_statistic`), such as
# the overlaps below (`nadcore.nads.overlap_interval`).

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (GPU, 10,000 nets)
seed = 0  # seed of the networks' initialisations and of the evaluation points
device = "auto"  # "auto", "cpu" or "cuda"
model = "lenet"  # a registry name or "package.module:factory" (your own architecture)
knobs = None  # settings to override, e.g. {"secant_networks": {"lenet": 500}}

# %%
from nadcore.book import setup
from nadcore.book.evidence import exact_value
from nadcore.chapters.nads import quantities as nq
from nadcore.chapters.nads.study import SUPPORT_NETWORKS, Study

ch = setup("02_nads", profile=profile, seed=seed, device=device, knobs=knobs,
           model=model)
study = Study(ch, model)

# %% [markdown]
# ## The NADs of the model under study
#
# The model under study is the chapter's `model` parameter (LeNet by default; re-run the chapter
# with `-p model "mypkg.nets:MyNet"` to get your own architecture's NADs). We compute its secant
# NADs and its exact-gradient NADs at the authors' single evaluation point, recording running
# estimates along the way, and the exact-gradient NADs averaged over several evaluation points
# (`gradient_points`): the secant with step 100 averages the network's slope over a large region,
# which a gradient taken at one point cannot do, and averaging over points is the fair comparison.

# %%
estimates = study.model_estimates()
secant, gradient, gradient_pts = estimates.values()
print(study.cost_table(estimates).to_string())

# %%
published = study.published(model)
views = study.views(estimates, published)
fig = study.draw_model_nads(views)

# %% [markdown]
# How close are these estimates to each other and to the authors' published NADs (10,000
# networks)? We compare subspaces, not single vectors: within a group of nearly equal
# eigenvalues the individual eigenvectors are not identifiable at any practical $N$, but the
# subspace they span is. The metric is the top-$k$ subspace overlap
# $\lVert U_k^\top V_k \rVert_F^2 / k$, which is 1 for identical subspaces and about $k/D$ for
# random ones ($D = 1024$). An estimate from $N$ networks has rank at most $N$, so overlaps with
# $k > N$ are not identifiable and shown as NaN. The brackets are 95% jackknife intervals over our
# estimate's Monte Carlo noise (the published set is taken as fixed).
#
# The two claims below ask for a top-16 overlap of at least 0.8 with the published NADs. The paper
# gives no overlap; an independent re-implementation of the authors' procedure with their 10,000
# networks reaches 0.93 (the notes beside the published files), unrelated subspaces give
# $16/1024 = 0.016$, and 0.8 leaves room for the Monte Carlo noise of the fewer networks a profile
# may use (each claim reports its `mc_fraction`, networks used over the paper's 10,000).

# %% tags=["nbval-check-output"]
print(study.overlap_table(estimates, published).to_string())

# %%
if published is not None:
    ch.claim("fig5-secant-published", **study.secant_published(secant, published))
    ch.claim("sec3-gradient-published",
             **study.gradient_published(gradient_pts, published))

# %% [markdown]
# ### Convergence with the number of networks
#
# The panels show the split-half agreement of each estimate as networks accumulate, and where the
# published NADs exist, the overlap of the running secant estimate with them. Split-half agreement
# at $N$ networks is a pessimistic proxy for the accuracy of the full estimate, which averages
# twice as many networks. An estimator is only worth comparing with another once its halves
# agree: chapter 3 uses the split-half overlap at the number of networks used (table below) to
# decide whether a comparison of estimators means anything.

# %%
curves = study.convergence_curves(estimates, published)
fig = study.draw_convergence(curves)

# %% tags=["nbval-check-output"]
split = study.split_half_table(estimates)
print("split-half overlap at the full number of networks")
print(split.round(3).to_string())

# %% [markdown]
# ### How many networks separate a dipole
#
# Eq. (6) reads the NADs as a statement about volumes: along a direction $u_i$ of small
# eigenvalue $\lambda_i$, few random initialisations already separate the dipole, since by
# Markov's inequality at most a share $\lambda_i / \eta$ of them reach a dipole score
# $q_\theta(u_i) \ge \eta$. The bound only caps the share; the paper's argument needs the share
# itself to fall with the eigenvalue. We test that on networks the NADs have not seen: the
# initialisations that follow the gradient estimate's, at the same evaluation point, scored along
# its NADs with $\eta$ the mean eigenvalue (the score every direction would get, on average, from
# an architecture of the same gradient energy without a preferred direction).

# %%
volumes = study.dipole_volumes(gradient)
fig = study.draw_dipole_volumes(volumes)

# %%
ch.claim("eq6-volume-falls", **study.volume_evidence(volumes))

# %% [markdown]
# ## Five architectures
#
# Next, the NADs of the architectures of the paper's Fig. 5: logistic regression, LeNet, VGG-11
# (with batch norm, as the authors used), ResNet-18 and DenseNet-121, all with one input channel
# and one output. Exact-gradient NADs are cheap and we compute them here for every architecture.
# Secant NADs cost 2,048 forward passes per network: on this profile we compute them for the
# architectures that have a `secant_networks` entry and take the **authors' published NADs** for
# the others (the `paper` profile recomputes all of them with 10,000 networks).

# %%
gallery_secant, gallery_gradient, secant_source = study.gallery()
print(study.gallery_sources(secant_source, gallery_gradient))

# %% [markdown]
# On the `paper` profile the secants of the three large networks run on the GPU's tensor cores
# (setting `secant_precision`): ResNet-18 in bfloat16, VGG-11 and DenseNet-121 in TF32, float32
# numbers whose products are rounded to 11 significant bits. That is what makes 10,000 networks
# of each affordable, but every forward pass changes a little, so we check what it does to the
# NADs: both precisions on the same first networks, the overlap of their top-$k$ subspaces next
# to the split-half overlap of the float32 estimate (how much Monte Carlo noise alone moves them
# at that size). The gradient estimates and every other profile use IEEE float32 throughout.

# %% tags=["nbval-check-output"]
print(study.precision_check())

# %%
fig = study.draw_gallery(gallery_secant, "fig5_secant",
                         title="Secant NADs (step 100): Fig. 5 of the paper")

# %%
fig = study.draw_gallery(gallery_gradient, "fig5_gradient", title="Exact-gradient NADs")

# %% [markdown]
# The spectra tell how anisotropic each architecture is. A flat spectrum means no preferred
# direction; a fast decay means a few directions dominate. Logistic regression must come out
# flat: its input gradient is its weight vector, whose entries are i.i.d., so $C \propto I$.

# %%
spectra = study.spectra(gallery_secant, gallery_gradient)
figs = study.draw_spectra(spectra)

# %% [markdown]
# Browse the NADs yourself: pick an architecture and estimator, then move the slider (indices 0-15,
# then spread up to 1023). It works in the web page without a running kernel.

# %%
from nadcore.book.explorer import nad_explorer

nad_explorer(spectra)

# %% [markdown]
# ### Fig. 5 against Fig. 1
#
# The paper reads its Fig. 5 with Fig. 1 beside it: the Fourier energy of the first few NADs
# lies inside the regions where the network generalises on $\mathcal{D}(v)$, and ResNet-18's
# NADs look like combs of spikes. Both sentences can be measured on the authors' own published
# NADs and maps. A network's high-accuracy region is where its published Fig. 1 map is above
# the level halfway from chance to its best cell (Fig. 1 samples every second frequency; a
# frequency in between takes the mean of its neighbours there), and the table gives the share
# of each first NAD's Fourier energy inside it, beside the share of the spectrum the region
# covers (what energy spread at random would give). A *spike* is a frequency whose energy is
# at least 1% of the largest and none of whose four neighbours is, and a *comb* is eight or
# more of them; the last columns give the share of a NAD's energy in a comb.

# %% tags=["nbval-check-output"]
support = study.support_table(gallery_secant)
print(support.round(3).to_string())

# %%
for arch in SUPPORT_NETWORKS:
    ch.claim(f"fig5-support-{arch}", **nq.support_evidence(support, arch))
if study.ours in support.index:
    ch.claim("fig5-support-ours", **study.support_ours(support))
ch.claim("fig5-resnet-comb", **study.resnet_comb())

# %% [markdown]
# Read on the authors' NADs and the authors' maps, these claims check the authors' artifacts
# against each other, so the scorecard counts them as checks; the row of our secant NADs of the
# chapter's model is the paper's claim. The same sentences on this book's own exact-gradient
# NADs of each full-width network (one evaluation point, far fewer random networks than the
# authors' 10,000, and not the authors' secant procedure; the share is a point estimate of the
# NADs drawn here) ask whether the paper's definition, estimated exactly, shows the same:

# %% tags=["nbval-check-output"]
own = nq.support_table({arch: gallery_gradient[arch] for arch in SUPPORT_NETWORKS})
print(own.round(3).to_string())

# %%
for arch in SUPPORT_NETWORKS:
    n = gallery_gradient[arch].meta["networks"]
    ch.claim(f"fig5-support-gradient-{arch}",
             **nq.support_evidence(own, arch, "gradient"), networks=n)
comb = min(own.loc["resnet18", f"comb NAD {i}"] for i in range(3))
ch.claim("fig5-resnet-comb-gradient", interval=exact_value(comb, "our gradient NADs"),
         networks=gallery_gradient["resnet18"].meta["networks"], trained=False)

# %% [markdown]
# ### Sparse NADs, and their order
#
# Two more sentences of the paper read Fig. 5: not all NADs are sparse in the spectral domain
# (ResNet-18's are combs of spikes), and the NADs do not go from low to high frequencies in a
# uniform order (DenseNet-121). We call a NAD's *sparsity* the share of its Fourier energy in its
# strongest real Fourier component, a frequency $k$ together with its mirror $-k$: 1 for a
# single component, about $2/1024$ for white noise. The *ordering* of a set of NADs is the rank
# correlation of a NAD's index with the frequency $|k|$ of its strongest component over the
# first 64 NADs: near 1 for NADs that go from low to high frequencies in order. Noise has no
# order, so a ranking of estimated NADs counts only once the estimate has converged (the
# split-half overlap of its top 64 NADs, last column). The table reads both on the authors'
# NADs and on this book's best NADs of each network (the secant where this profile computes it,
# else the exact gradient at one point):

# %% tags=["nbval-check-output"]
sparsity = study.sparsity_table(gallery_secant, gallery_gradient)
print(sparsity.round(3).to_string())

# %%
ch.claim("fig5-not-all-sparse", **study.not_all_sparse(gallery_secant))
ch.claim("fig5-ordering-densenet121",
         **study.densenet_ordering(gallery_secant, gallery_gradient))
ch.claim("fig5-ordering-published", **study.published_ordering())

# %% [markdown]
# ### The big networks at a reduced width
#
# The paper's big networks are expensive to train on a CPU, so the book's campaign trains
# them at a reduced width (chapter 3). Does a narrower network keep the NADs of the full one?
# Gradient NADs are cheap at any width, so here they are at the widths of the campaign and its
# width study, from as many networks as the full network's estimate, against that estimate.
# Two estimates of the same NADs from a finite number of networks never overlap perfectly, so
# the comparison is with a second, independent estimate of the full network (the next seed):
# the noise floor. A narrow network whose overlap reaches the floor has, as far as this many
# networks can tell, the same NADs. Where the floor itself sits near the chance level $k/D$,
# the estimates have not converged and the comparison says nothing.

# %% tags=["nbval-check-output"]
widths = study.width_study()
print(study.width_report(widths))

# %%
for arch, table in widths.items():
    ch.claim(f"width-nads-{arch}", **study.width_nads(arch, table))

# %% [markdown]
# For logistic regression the sample spectrum of $N$ draws of an isotropic covariance spreads,
# by the Marchenko–Pastur law, between $(1 \mp \sqrt{D/N})^2$ times the true eigenvalue. We check
# that the measured spread is no wider than that.

# %% tags=["nbval-check-output"]
if "logreg" in gallery_gradient:
    lr = gallery_gradient["logreg"]
    print(study.marchenko_pastur_report(lr))
    ch.claim("logreg-isotropic", **study.logreg_isotropic(lr))

# %% [markdown]
# ## Secant or gradient?
#
# The table below puts the two estimators side by side for every architecture: the overlap of the
# two NAD subspaces, and how much of the Fourier energy of the first three NADs sits at low
# frequencies (within radius 8 of the centre of the 32x32 spectrum, 20% of the frequency plane).
# For logistic regression the two estimators must coincide (a secant of a linear function *is* its
# gradient; both estimates use the same networks). For the CNNs, an overlap near the chance level
# $k/D$ means the two estimators point at unrelated directions.

# %% tags=["nbval-check-output"]
comparison = study.estimator_comparison(gallery_secant, gallery_gradient, secant_source)
print(comparison.to_string(float_format="{:.3f}".format))

# %%
if "logreg" in gallery_secant:
    ch.claim("logreg-secant-equals-gradient",
             **study.logreg_agreement(gallery_secant, gallery_gradient))

# %% [markdown]
# The secant NADs of the step-100 procedure are what the published figures show. Exact gradients
# describe the network in an infinitesimal neighbourhood of one input point. Which of the two
# predicts what a network can *learn* is an empirical question: chapter 3 trains LeNet on datasets
# aligned with each kind of NAD and answers it with data.

# %% [markdown]
# ## Reproducibility

# %%
ch.finish(extra={"secant NADs": secant_source,
                 "published NADs": "authors' files (10,000 networks, step 100)"})
