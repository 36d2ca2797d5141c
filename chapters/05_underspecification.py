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
# # Underspecification through the lens of NADs
#
# A learning problem is *underspecified* when many different predictors reach the same validation
# accuracy {cite:p}`damour2020underspecification`. Validation accuracy then says nothing about
# which of them training picked, and so nothing about how the model behaves once the test
# distribution shifts. The follow-up to the NAD paper {cite:p}`ortizjimenez2021underspecification`
# uses neural anisotropy directions to build underspecified problems whose possible solutions are
# known exactly, and asks which solution an architecture chooses.
#
# The recipe is to glue two datasets together along the channel axis. If
# $(x_1, y) \sim \mathcal{D}_1$ and $(x_2, y) \sim \mathcal{D}_2$ share the label, the sample
# $x = x_1 \oplus x_2$ can be classified from either half alone. The building block is the linearly
# separable family of chapter 3,
#
# $$ x = \epsilon\, y\, v + w, \qquad w \sim \mathcal{N}\!\left(0, \sigma^2 (I - v v^\top)\right),
#    \qquad y \sim \mathcal{U}\{-1, +1\}, $$
#
# written $\mathcal{D}(v)$: a single discriminative direction $v$ with margin $\epsilon$. Chapter 3
# showed that a network learns $\mathcal{D}(v)$ well only when $v$ lies among its first NADs. Two
# experiments follow from that:
#
# 1. **$\mathcal{D}(v_1) \oplus \mathcal{D}(v_2)$** (paper Sec. 3, Fig. 2): both channels are
#    linearly separable, with margins $\epsilon_1 = 1$ and $\epsilon_2 = 0.5$. Infinitely many
#    linear separators in the span of $v_1 \oplus 0$ and $0 \oplus v_2$ fit the data perfectly.
#    Which one does the network pick, as $v_1$ and $v_2$ move along its NAD ordering?
# 2. **Binary CIFAR-10 $\oplus\ \mathcal{D}(v)$** (paper Sec. 4, Fig. 3): three colour channels
#    that are hard to classify, plus one channel that a *linear* classifier solves perfectly. The
#    simplicity-bias conjecture predicts that networks always take the easy linear shortcut. The
#    paper finds that an MLP does, but a CNN does so only when $v$ is among its first NADs.
#
# In both cases we see which information a trained network uses by switching channels off at test
# time (setting them to zero) and measuring accuracy again. Every trained number comes from
# independent seeds (each with its own initialisation, data and batch order), reported as a mean
# with a 95% t-interval, and each claim is checked against a criterion fixed before the runs.

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (GPU)
seed = 0  # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"  # "auto", "cpu" or "cuda"
data_root = None  # folder of the official cifar-10-batches-py ($NADCORE_DATA_ROOT)
subset_root = None  # folder with cifar10_subset.npz (None: the default search)
knobs = None  # settings to override, e.g. {"concat_models": ["lenet"]} (dict or JSON)

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown

from nadcore.book import setup
from nadcore.chapters.underspecification import figures as uplots
from nadcore.chapters.underspecification.study import Study

ch = setup("05_underspecification", profile=profile, seed=seed, device=device,
           knobs=knobs, data_root=data_root, subset_root=subset_root)
study = Study(ch)

# %% [markdown]
# ## Which NADs
#
# As in the papers, the directions are NADs of a **one-channel, one-output copy** of each
# architecture: $1024$-pixel vectors $u_0, u_1, \dots, u_{1023}$, ordered by decreasing eigenvalue
# of the gradient covariance (index 0 is the most preferred direction). They come from the book's
# one rule for NADs (`Chapter.nads`), with the source set per model by the `nad_source` setting.
# LeNet and ResNet-18 get the authors' published NADs (10,000 networks each, the estimate the
# follow-up's experiments were run on; chapter 2 compares them with this book's own). The MLPs
# have no published NADs, and their gradient covariance is
# nearly isotropic anyway (a dense first layer with i.i.d. entries prefers no direction), so they
# get exact-gradient NADs from `gradient_networks` networks: for an MLP any orthonormal basis is
# about as good as any other, which the experiments below check. A basis with fewer than 1024
# directions is completed with its orthogonal complement (`nadcore.nads.complete_basis`).

# %% tags=["nbval-check-output"]
bases = study.nad_bases()
print(study.nad_summary(bases))

# %% [markdown]
# ## What counts as reproduced
#
# The claims and their criteria are registered before any network is trained
# (`nadcore/chapters/underspecification/claims.py`) and printed below. The paper states one number, the
# MLP's 100% test accuracy with both channels (criterion: at least 99%); the rest are words, read
# at their strength. "Completely neglects" a channel, or fitting "only" the other one, means chance
# (50% on these binary problems), with a tolerance of 10 points: between 40% and 60%. A network "uses" a
# channel when that channel alone classifies at least 90% of the test samples. The boundary swings
# from "completely parallel" to one axis to parallel to the other: 90 degrees, read as a swing of
# 90 degrees give or take 15; a maximum-margin boundary has its normal within 10 degrees of 26.6. Switching the $\mathcal{D}(v)$ channel off "costs nothing" within 5 points.
# "Early" and "late" are the first and last NAD indices of the grid. A network
# *fitted its training set* when its training accuracy over the last epoch is at least 95%. The
# paper's networks all reach close-to-zero training loss, and several claims only make sense for a
# network that fitted: "it ignores channel 1" says little about a network that learned nothing at
# all. Where the networks a claim rests on did not fit, its verdict is *inconclusive*. Intervals of
# accuracies include the binomial noise of the finite test set.

# %% tags=["nbval-check-output"]
print(ch.criteria(study.claim_ids(), **study.fill))

# %% [markdown]
# ## What the `cpu` profile cuts
#
# The paper trains every network on 10,000 samples (50,000 images for CIFAR-10) for 30 to 60
# epochs, on an $11 \times 11$ grid of NAD pairs and thirteen NAD indices. The `cpu` profile trains
# the MLP and LeNet on $\mathcal{D}(v_1) \oplus \mathcal{D}(v_2)$ at the paper's samples, epochs
# and test samples, with NADs from the paper's 10,000 networks, but only on the grid's two ends
# (NAD indices 0 and 1000: every claim compares them), with five seeds instead of three. On
# CIFAR-10 it keeps four NAD indices and fewer epochs for the MLP and LeNet, on the project's
# genuine CIFAR-10 subset when the full set is absent. The table compares samples and epochs with
# the appendix's; "steps" is the number of SGD updates per network, and its ratio to the paper's is
# the *budget fraction* each claim reports. ResNet-18 comes from the cpu campaign (below) and runs
# in full on the `paper` profile.

# %%
print(study.fig2_budget_table().to_string(index=False))
print(study.sample_sizes())

# %% [markdown]
# ## Experiment 1: two linearly separable channels
#
# For every pair of NAD indices $(i_1, i_2)$ on a grid and every seed, we train a fresh
# two-channel network on $\mathcal{D}(u_{i_1}) \oplus \mathcal{D}(u_{i_2})$ with $\epsilon_1 = 1$,
# $\epsilon_2 = 0.5$ and $\sigma = 1$, both channels sharing one label:
#
# ```{literalinclude} ../../nadcore/data/underspec.py
# :pyobject: underspecified_dataset
# ```
#
# Each network is then tested on fresh samples in three ways, following the paper's Fig. 2a: with
# both channels, with channel 2 zeroed (only channel 1 on), and with channel 1 zeroed (only
# channel 2 on). A network that uses only one channel keeps its accuracy when the other channel is
# switched off and drops to chance when that channel itself is switched off:
#
# ```{literalinclude} ../../nadcore/chapters/underspecification/runs.py
# :pyobject: channel_ablation_accuracy
# ```
#
# Training follows the appendix: SGD with momentum 0.9, batches of 128, the logistic loss (one
# output; the paper used cross-entropy on two outputs, which is the same model family) and a
# "triangular (cyclic)" learning rate. The appendix gives no more detail, so we use one cycle that
# rises linearly from 0 to its maximum over the first two fifths of training and falls back to 0
# by the end (`nadcore.train.lr_at`). The maximum is 0.2 for the MLP and LeNet, with no weight
# decay (ResNet-18, on the `paper` profile: 0.1 and weight decay $10^{-5}$). One departure: we
# clip the gradient norm at 0.5, as the original NAD code's training loop did (the appendix does
# not say whether the follow-up's runs clipped; the `clip_grad_norm` setting turns it off). Every
# run is a job of the book's common runner
# (`nadcore.chapters.underspecification.runs.concat_grid_experiment`), cached and spread over the
# profile's worker processes.

# %%
concat = study.fig2(bases)
concat_frame = study.runs_frame(concat)

# %% [markdown]
# Test accuracies in percent (mean $\pm$ half-width of the 95% t-interval over the seeds), the
# training accuracy over the last epoch, and the tilt of the decision boundary (explained below).

# %% tags=["nbval-check-output", "near-chance"]
print(study.fig2_summary(concat))

# %% [markdown]
# The three accuracies as heatmaps (paper Fig. 2a; appendix Figs. 4 and 6). Rows are the NAD
# index of $v_1$ (channel 1, the larger margin), columns that of $v_2$. Colours show the mean over
# the seeds; each cell gives the mean and, below it, the half-width of its 95% t-interval, in
# percent.

# %%
for m, r in concat.items():
    uplots.ablation_heatmaps(r, title=f"{m}: D(v1) (+) D(v2), test accuracy")
    plt.show()
    ch.figure_data(f"fig2a-{m}", concat_frame[concat_frame.model == m])

# %% [markdown]
# ### Decision-boundary cross-sections
#
# Which separator did the network pick? In the plane spanned by $v_1 \oplus 0$ and $0 \oplus v_2$
# the data are two points, $\pm(\epsilon_1, \epsilon_2)$; everything else is noise orthogonal to the
# plane. We evaluate each trained network on a grid of points $x_0 + a\,(v_1 \oplus 0) + b\,(0 \oplus
# v_2)$, where $x_0$ is a test sample with its two in-plane components removed. The cross-section
# therefore passes through noise typical of the data rather than through the origin. The decision
# boundary is drawn where the network's output changes sign; nothing about its shape is assumed,
# and a unit test checks that for a linear model this procedure returns exactly the expected line.
# For reference, the dashed line is the maximum-margin separator (normal along
# $(\epsilon_1, \epsilon_2)$, about 27° from the $v_1$ axis). A vertical boundary means that only
# channel 1 matters; a horizontal one means that only channel 2 does. The figure shows the
# networks of the first seed; the tilt over all seeds follows.

# %%
for m, r in concat.items():
    drawn = study.section_pairs(r)
    title = f"{m}: cross-sections of the decision boundary (seed {ch.seeds[0]})"
    uplots.cross_sections(r, drawn, seed_index=0, title=title)
    plt.show()
    ch.figure_data(f"fig2b-{m}", r.sections_frame(drawn, seed_index=0).assign(model=m))

# %% [markdown]
# The tilt of the boundary over the whole grid, summarised by the direction of its normal in the
# plane: 0° means only channel 1 matters, 90° means only channel 2, and about 27° is the
# maximum-margin separator. The angle comes from a least-squares plane fitted to the network's
# output over the cross-section, so it is a summary and ignores any curvature of the boundary:
#
# ```{literalinclude} ../../nadcore/chapters/underspecification/runs.py
# :pyobject: boundary_angle
# ```
#
# Cells show the mean over seeds and the half-width of its 95% interval. For a network that did
# not fit its training set (two late NADs) the angle is noise and can fall outside $[0°, 90°]$.

# %%
title = "Tilt of the decision boundary in the (v1, v2) plane"
uplots.angle_heatmaps(concat, title=title)
plt.show()
tilt = concat_frame[["model", "seed", "v1_index", "v2_index", "angle", "train_acc"]]
ch.figure_data("fig2-tilt", tilt)

# %% [markdown]
# ### The claims of Sec. 3
#
# Each claim takes one value per seed and its 95% t-interval. The MLP has no preferred directions,
# so its accuracies and boundary should look the same at every NAD pair, and with both channels on
# it should classify every test sample (the appendix's 100%). A CNN should use channel 1
# when $v_1$ is early, ignore it when $v_1$ is late and switch to channel 2 (half the margin) when
# $v_2$ is early, lean towards the maximum-margin boundary when both are early, and swing from a
# boundary parallel to one axis to one parallel to the other across the grid.

# %% tags=["nbval-check-output", "near-chance"]
for claim, kw in study.fig2_evidence(concat).items():
    ch.claim(claim, **kw)

# %% [markdown]
# ## Experiment 2: binary CIFAR-10 with a linearly separable fourth channel
#
# CIFAR-10 becomes a binary problem: label $-1$ for the first five classes (airplane, automobile,
# bird, cat, deer) and $+1$ for the other five. Each image (normalised per channel with the
# authors' constants) gets a fourth channel drawn from $\mathcal{D}(u_i)$ with the image's label
# and $\epsilon = 1$. The noise level follows the appendix, which chose it to make the phase
# transition clear: $\sigma = 3$ for the MLP and ResNet-18, $\sigma = 1$ for LeNet. The MLP here is
# the appendix's wider one (hidden layers of 200 and 50). Training uses SGD with momentum 0.9,
# weight decay $10^{-5}$ and a triangular learning rate peaking at 0.15 (gradient clipping at 0.5
# as above). Within one seed, every NAD index starts from the same initial weights and sees the
# same batch order, so the runs differ only in $v$; the seeds differ in everything. Test accuracy
# is measured with all four channels, with the CIFAR channels only (the $\mathcal{D}(v)$ channel
# zeroed), and with the $\mathcal{D}(v)$ channel only (the three colour channels zeroed).
#
# Without the full CIFAR-10 (no internet here) the chapter uses the project's genuine subset: real
# CIFAR-10 images, a prefix of each official batch file, as printed below. Worker processes load the
# images from the same description (`data_spec`); the cache key records their name, checksum and counts.

# %% tags=["nbval-check-output"]
data = study.cifar10()
print(data.summary())
print(study.label_counts(data))
print(study.fig3_budget_table(data).to_string(index=False))

# %%
cifar_runs = study.fig3(bases, data)
cifar_frame = study.runs_frame(cifar_runs)

# %% tags=["nbval-check-output", "near-chance"]
chance = 0.5
transitions = study.phase_transitions(cifar_runs, chance)
print(study.fig3_summary(cifar_runs, transitions))

# %% [markdown]
# The paper's Fig. 3: accuracy against the NAD index of $v$, mean over seeds with 95% t-intervals
# as error bars and every seed as a dot. The dashed vertical line marks the phase transition (the
# first tested index where the mean $\mathcal{D}(v)$-only accuracy falls below the midpoint
# between chance and its maximum).

# %%
title = f"Binary CIFAR-10 (+) D(v): {data.description['n_train']:,} training images"
uplots.cifar_dv_curves(cifar_runs, transitions=transitions, chance=chance, title=title)
plt.show()
ch.figure_data("fig3", cifar_frame)

# %% [markdown]
# ### The claims of Sec. 4
#
# The MLP should lean on the linear channel at every NAD index (simplicity bias): its
# $\mathcal{D}(v)$-only accuracy should beat its CIFAR-only accuracy everywhere. A CNN should use
# only the $\mathcal{D}(v)$ channel for its first NADs (its CIFAR channels alone then at chance)
# and ignore it for its last ones, even after fitting its training set, which it then does through
# the CIFAR channels alone (switching the $\mathcal{D}(v)$ channel off costs nothing). Each of these
# two sentences of the paper is tested in both of its halves.

# %% tags=["nbval-check-output", "near-chance"]
for claim, kw in study.fig3_evidence(cifar_runs).items():
    ch.claim(claim, **kw)

# %% [markdown]
# ## The follow-up's ResNet-18
#
# The follow-up runs both experiments on ResNet-18 too. Even at width 16 a ResNet-18 takes about
# 40 s per pair of NADs and about 5 minutes per CIFAR-10 run on one core of the 2-core EPYC (the
# campaign's ledger, `results/cpu/provenance.json`), too much for this build's grid. The cpu
# campaign trains it off the build (`scripts/run_campaign.py --campaign cpu`, its stages for the
# follow-up's Figs. 2 and 3) at width 16, on the `cpu` profile's grid of NAD pairs, NAD indices,
# data and seeds, with LeNet's samples and epochs and ResNet-18's own learning rate and weight
# decay from the appendix. Its NADs are the authors' published ones of the full-width
# ResNet-18 (completed to a basis). The campaign commits its runs
# (`results/cpu/05_underspecification/`), and the functions above tabulate, draw and score them.
# The claims name the width, the seeds and the bundle; a seed enters once it has every run of its
# figure. The bundle keeps each boundary's tilt but not its cross-section.

# %% tags=["nbval-check-output"]
net, net_concat = study.campaign("us-fig2")
print(ch.criteria(net.claim_ids(), **net.fill) + "\n\n" + net.fig2_summary(net_concat))

# %%
for m, r in net_concat.items():
    uplots.ablation_heatmaps(r, title=f"{r.model}: D(v1) (+) D(v2), test accuracy")
    plt.show()
    uplots.angle_heatmaps({m: r}, title=f"{r.model}: tilt of the decision boundary")
    plt.show()

# %% tags=["nbval-check-output"]
for claim, kw in net.fig2_evidence(net_concat).items():
    ch.claim(claim, **kw)

# %% tags=["nbval-check-output"]
net, net_cifar = study.campaign("us-fig3")
net_transitions = net.phase_transitions(net_cifar, chance)
print(ch.criteria(net.claim_ids(), **net.fill) + "\n\n"
      + net.fig3_summary(net_cifar, net_transitions))

# %%
for m, r in net_cifar.items():
    n_train = r.settings["data"]["n_train"]
    title = f"{r.model}: binary CIFAR-10 (+) D(v), {n_train:,} training images"
    uplots.cifar_dv_curves({m: r}, transitions=net_transitions, chance=chance,
                           title=title)
    plt.show()

# %% tags=["nbval-check-output"]
for claim, kw in net.fig3_evidence(net_cifar).items():
    ch.claim(claim, **kw)

# %% [markdown]
# ## Closing note: how to read the verdicts
#
# The verdicts above are computed from this run's numbers; the tables and figures give the values
# behind them. Three patterns are worth looking for:
#
# * **Does the MLP ignore the NAD ordering?** Then its accuracies move over the grid by no more than
#   the test-set noise, its boundary keeps one tilt everywhere, and the larger margin (channel 1)
#   dominates, as the appendix describes.
# * **Do LeNet and ResNet-18 follow their NADs?** Then each uses channel 1 whenever $v_1$ is
#   early, ignores it when $v_1$ is late and, with $v_2$ early, solves the task through channel 2
#   alone despite the half margin, its boundary turning from vertical to horizontal. With both
#   directions late a network trained on our budget may not fit its training set at all (the NAD
#   effect of chapter 3); such cells make the claims that rest on them inconclusive rather than
#   refuted.
# * **Simplicity bias for the MLP, not for the CNNs?** On binary CIFAR-10 $\oplus$ $\mathcal{D}(v)$
#   the MLP should lean on the linear channel at every index, while a CNN uses it only for its
#   first NADs and, for a late NAD, fits its training set through the CIFAR channels alone: a
#   solution that is worse on the test set and more complex than the linear one it leaves unused.
#
# The scale caveats: fewer samples, epochs and NAD indices than the appendix (see the tables; each
# claim reports its budget fraction), CIFAR-10's genuine subset when the full set is absent, and
# $\sigma = 3$ for the MLP's $\mathcal{D}(v)$ channel, a harder problem for a linear separator
# learned from a few thousand images than from the paper's 50,000. ResNet-18 is the campaign's
# narrow network, at width 16 with the full network's published NADs. The `paper` profile (a GPU,
# the full CIFAR-10 under `data_root`) runs the appendix's settings, including the full ResNet-18.

# %% [markdown]
# The verdicts of this run, computed from the intervals above:

# %%
Markdown(ch.verdict_summary())

# %% [markdown]
# ## Reproducibility

# %%
ch.finish(data=data.description["name"], extra=study.nad_sources(bases))
