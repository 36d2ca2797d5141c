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
# # A NAD atlas
#
# The paper ends with a suggestion: "Extending the NAD discovery algorithms to other families of
# architectures like ... transformers would be a natural next step", and it calls NADs a
# *signature* of an architecture. Neither the authors' code nor the chapters so far take that
# step: every architecture in them predates 2017. This chapter computes the NADs of modern
# architectures (vision transformers, MLP-Mixers, ConvNeXt, mobile CNNs, ...) next to the paper's
# five, compares them as fingerprints, and tests predictions made before the run.
#
# Any classification model of [timm](https://github.com/huggingface/pytorch-image-models) or
# torchvision can be named with a spec such as `timm:vit_tiny_patch16_224?patch_size=4&depth=4`
# (`nadcore.nets.hub`). It is built from scratch (never with pretrained weights) for this book's
# inputs: one channel, 32x32 pixels, one output. Keyword overrides shrink the models to sizes a
# laptop can sample hundreds of times, and fix three initialisation choices that would otherwise
# hide the architecture from its input gradient:
#
# * MLP-Mixer and ResMLP initialise their classifier head to zero, so every input gradient is
#   exactly zero (`hub_head_std=0.02` draws the head like timm's other heads);
# * layer-scale gains of $10^{-6}$ to $10^{-4}$ (ConvNeXt, PoolFormer, ResMLP) make the residual
#   blocks nearly invisible at initialisation (`ls_init_value=1.0` or `hub_layer_scale=1.0`);
# * zero-initialised last BatchNorm gains in residual blocks (RegNet, MobileViT) leave only the
#   shortcuts (`zero_init_last=False`).
#
# As in chapter 2, each network is evaluated in eval mode (BatchNorm with its initial running
# statistics) and the NADs are the eigenvectors of the covariance of the exact input gradients
# of many random initialisations.

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (GPU, 10,000 nets)
seed = 0  # seed of the networks, the evaluation point, random directions, training runs
device = "auto"  # "auto", "cpu" or "cuda"
model = None  # your architecture: a registry name, "pkg.mod:factory" or "timm:NAME"
knobs = None  # settings to override, e.g. {"networks": {"default": 512}}

# %%
from IPython.display import Markdown, display

from nadcore.book import setup
from nadcore.chapters.nad_atlas import runs as atlas
from nadcore.chapters.nad_atlas.study import Study

ch = setup("07_nad_atlas", profile=profile, seed=seed, device=device, knobs=knobs,
           model=model)
cfg = ch.cfg
study = Study(ch, model)

# %% [markdown]
# ## The atlas
#
# Every architecture gets the same treatment: exact-gradient NADs from random initialisations at
# one evaluation point (chapter 2's estimator and seeding). The paper's five architectures
# (`from_chapter2`) share chapter 2's estimates and their numbers of networks; the others get
# `networks` each. The table says
# what each estimate cost and how settled it is: the split-half overlap compares the top-$k$
# NADs of the even and the odd networks (1: the two halves agree; $k/1024$: they are unrelated).
# An estimate whose halves disagree is far from converged, and every comparison below inherits
# its noise.

# %%
results = study.atlas()  # chapter 2's estimates of the paper's five, shared (cached)
table = study.architecture_table(results)
ch.figure_data("architectures", table)
print(table.drop(columns="spec").to_string(index=False, float_format="{:.3g}".format))

# %% [markdown]
# The secant estimator of the authors' code (step 100, 2,048 forward passes per network) is
# affordable on this profile only for the architectures in `secant_networks`; the overlap of its
# NADs with the gradient NADs of the same architecture says whether the two estimators agree.

# %% tags=["nbval-check-output"]
secant = study.secant_nads()
agreement = study.secant_agreement(secant, results)
print(agreement.to_string(float_format="{:.3f}".format))

# %% [markdown]
# ## Gallery
#
# The first three NADs of every architecture, each in pixel space and as its Fourier energy
# (zero frequency in the centre).

# %%
fig = study.draw_gallery(results)

# %% [markdown]
# Browse them yourself (the same explorer as chapter 2): pick an architecture, then move the
# slider over the NAD indices.

# %%
study.explore_nads(results)

# %% [markdown]
# ## Fingerprints
#
# If NADs are a signature, two architectures can be compared by their NADs alone. The distance
# between two architectures is $1 - \lVert U_k V_k^\top \rVert_F^2 / k$, one minus the overlap
# of their top-$k$ NAD subspaces: 0 for the same subspace, about $1 - k/1024$ for unrelated ones.
# The tree beside the heatmap joins the closest architectures first (average linkage). Each
# estimate's own noise sets the scale: the split-half distance of an architecture (one minus its
# split-half overlap) is how far two estimates of the *same* architecture from half the networks
# each are apart.

# %%
pairs = study.fingerprint_distances(results)
M = atlas.distance_matrix(pairs, results)
tree = atlas.fingerprint_tree(M)
fig = study.draw_fingerprints(pairs, M, tree, results)

# %% [markdown]
# What the numbers say (this text is written by the code from the distances, not by hand):

# %%
floor = study.noise_floor(results)
display(Markdown(study.describe_fingerprints(M, results, floor)))
ch.claim("atlas-signature", **study.signature(M, results, floor))

# %% [markdown]
# ## Patch embeddings are pooling
#
# A vision transformer or an MLP-Mixer starts by cutting the image into $p \times p$ patches and
# mapping each patch linearly to a token: a convolution with a $p \times p$ kernel and stride
# $p$. Chapter 1's linear pooling layer is exactly this, in one dimension, with a box prefilter:
# eq. (1) says that keeping one sample in $p$ folds the $p$ input frequencies
# $t, t + M, \dots, t + (p-1)M$ ($M = 32/p$) onto the token grid's frequency $t$
# (`nadcore.theory.pooling.aliasing_matrix`). The patch kernel is a random prefilter rather than a
# box, so it blinds no frequency on average, but the folding stays. At initialisation a
# transformer's attention is close to uniform, so it treats its tokens nearly alike; a network
# that treats all tokens alike only sees the token grid's zero frequency, and its input gradient
# can carry only the pixel frequencies folded onto it: the multiples of $32/p$ along both axes
# ($p^2$ of the 1,024 frequencies, `nadcore.theory.patches.token_alias_mask`).
#
# The prediction, registered before the run (`nadcore/chapters/nad_atlas/claims.py`): the top-$k$
# NADs of ViT/4, ViT/8 and MLP-Mixer/4 put at least half of their Fourier energy on their patch
# size's alias set; and changing the patch size moves the energy: ViT/8 puts more of it than
# ViT/4 on the frequencies that $p = 8$ folds onto zero and $p = 4$ does not. The bars show every
# architecture (the CNNs as a reference), with jackknife intervals over the 8 Monte Carlo groups
# of networks; dashed lines: the share of the frequencies the set holds (what isotropic NADs would
# put there).

# %%
alias = study.alias_fractions(results)
fig = study.draw_alias(alias)

# %% tags=["nbval-check-output"]
for claim, evidence in study.patch_alias_evidence(alias, results).items():
    ch.claim(claim, **evidence)
if {"ViT/4", "ViT/8"} <= set(results):
    ch.claim("atlas-patch-size-moves", **study.patch_size_moves(results))

# %% [markdown]
# ## Does the NAD index predict what a modern network learns?
#
# The paper's Fig. 6 trains a network on $\mathcal{D}(u_i)$, data that are linearly separable
# along its NAD $u_i$, for NAD indices from the first to the last, and finds that accuracy falls
# with the index. We repeat this for small modern architectures of the atlas (`index_models`), on
# the data formula of the paper's text ($x = \epsilon y v + w$), `seeds` seeds, and train the same
# networks on $\mathcal{D}(r)$ for random directions $r$ as the control: a NAD index predicts
# something only if the first NADs beat random directions, not merely if they are learned.
# Registered claims: a positive rank correlation between eigenvalue and accuracy, and first NADs
# (index below `first`) learned better than random directions.

# %%
frames = study.index_accuracy(results)
fig = study.draw_index(frames)

# %% tags=["nbval-check-output", "near-chance"]
for arch, slug in cfg["index_models"].items():
    print(study.describe_index(arch, frames, results))
    ch.claim(f"atlas-index-{slug}-ranks", **study.index_ranks(arch, frames, results))
    ch.claim(f"atlas-index-{slug}-vs-random", **study.index_vs_random(arch, frames))

# %% [markdown]
# ## What can a network learn? Fig. 1 predicted from its NADs
#
# The paper's thesis is that a network learns easily the directions its NADs favour. Turned into
# a tool, it should predict a network's whole Fig. 1 map from its NADs alone, without training the
# 256 networks the map costs. The predictor here has no fitted parameter: a direction $v$ scores
# the energy of the input-gradient covariance $\Sigma = \mathbb{E}_\theta[\nabla_x f\,
# \nabla_x f^\top]$ along it, relative to an average direction,
#
# $$\mathrm{score}(v) = D\,\frac{v^\top \Sigma v}{\lVert v\rVert^2\,\mathrm{tr}\,\Sigma}
#   = D\,\frac{\sum_i \lambda_i (u_i^\top v)^2}{\lVert v\rVert^2 \sum_i \lambda_i},$$
#
# so 1 means "as much as an average direction". It rebuilds $\Sigma$ from the NADs $u_i$ and
# their eigenvalues $\lambda_i$:
#
# ```{literalinclude} ../../nadcore/nads/predict.py
# :pyobject: predicted_learnability
# ```
#
# Two scores say how well a predicted map matches a measured one, on the map's distinct cells (the
# published maps mirror $k_2 \to -k_2$, so 144 of their 256 cells are distinct): the rank
# correlation between score and accuracy, and the AUC that separates the learnable cells
# (accuracy $\geq 0.9$) from those left at chance ($\leq 0.6$). A useful predictor needs an AUC
# of at least 0.9 and a rank correlation of at least 0.5; both bounds are registered in
# `nadcore/chapters/nad_atlas/claims.py` (the AUC's with the tool, the rank's after a first look
# at the scores on the authors' NADs, before this book's own NADs and the trained atlas cells
# were scored). The predictions come from three sets of NADs: the authors' published ones; this
# book's NADs of the full-width networks (chapter 2's: the authors' secant estimator where chapter
# 2 computes it, for LogReg and LeNet, exact gradients for the big networks; LeNet's and LogReg's
# exact-gradient NADs are scored beside them, without a claim); and this book's exact-gradient
# NADs of the big networks at the width the campaign trains them, scored on the campaign's own
# cells of the same narrow network.

# %%
sets = study.prediction_sets(results)
fig = study.draw_predictions(sets)

# %%
scores = study.prediction_table(sets)  # the table behind the sentences (data link)
display(Markdown(study.describe_predictions(scores)))

# %% [markdown]
# Where the estimators part: the secant NADs (the authors', and this book's for LogReg and LeNet)
# measure a network's response across a step of 100 on inputs of unit scale, the exact gradient
# its slope at one evaluation point (chapter 2 compares the two). The rows above put the
# predictions of both beside the same published maps; the authors' own NADs, on which their
# figures rest, are secant NADs.

# %%
fig = study.draw_narrow_predictions(sets)

# %% tags=["nbval-check-output"]
for claim, evidence in study.prediction_evidence(sets).items():
    ch.claim(claim, **evidence)

# %% [markdown]
# ### Architectures nobody has mapped
#
# The same predictor gives a Fig. 1 map for every architecture of the atlas, at the cost of its
# NADs. For the atlas architectures in `predict_models` the campaign trained 12 cells each with
# the authors' recipe (10,000 samples, 20 epochs), cells chosen before any training so that their
# predicted scores spread evenly from the lowest to the highest
# (`nadcore.chapters.nad_atlas.prediction.cells_spanning_prediction`). A patch embedding folds
# the pixel frequencies onto the token grid (the section above), so the transformers and MLPs
# should learn the few directions on their alias set and little else; a ConvNeXt, whose predicted
# map is nearly flat, is the case where the NADs order nothing.

# %%
predicted = study.predicted_maps(results)
fig = study.draw_atlas_predictions(predicted)

# %%
cells = study.atlas_cells(predicted)
fig = study.draw_atlas_cells(cells)

# %%
display(Markdown(study.describe_atlas_cells(cells)))

# %% tags=["nbval-check-output"]
for claim, evidence in study.atlas_prediction_evidence(cells, results).items():
    ch.claim(claim, **evidence)

# %% [markdown]
# ## Summary
#
# The verdicts of this run, listed by the code (no outcome is written by hand):

# %%
Markdown(ch.verdict_summary())

# %% [markdown]
# The `paper` profile computes 10,000 networks per architecture for all 18 architectures of
# `nadcore/chapters/nad_atlas/settings.py` and trains on 10,000 samples per run, which is a job for
# a GPU. To put your own model in the atlas, run this chapter with
# `-p model "timm:NAME?k=v"` (or a registry name, or `"pkg.mod:factory"`).
#
# ## Reproducibility

# %%
ch.finish()
