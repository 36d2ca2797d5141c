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
# # CIFAR-10: poisoning and flipping along NADs
#
# The previous chapters showed that an architecture's neural anisotropy directions (NADs) decide
# which *linearly separable* problems it can learn. Section 4.2 of the NAD paper
# {cite:p}`ortizjimenez2020nads` asks whether the same directions matter for a real dataset,
# CIFAR-10, with two experiments:
#
# 1. **Poisoning (paper Fig. 7).** Every training image gets a tiny, perfectly discriminative
#    *carrier*: its component along NAD $i$ or $i+1$ (in one colour channel, with a sign that
#    depends on the class) is replaced by $\pm\epsilon$. The training set becomes separable by the
#    carrier alone, but a network that relies on it learns nothing that transfers to the clean test
#    set. If a network prefers the features spanned by its first NADs, a carrier on the first NADs
#    should wreck test accuracy, and a carrier on the last NADs should be ignored.
# 2. **Flipping (paper Fig. 8).** Train the same network on the images and on the images with the
#    order of their NAD coordinates reversed, $x' = U\,\mathrm{flip}(U^\top x)$. That is an
#    orthogonal change of coordinates (no information is lost), yet if the NADs are aligned with the
#    useful features of natural images, the flipped problem should generalise worse.
#
# This chapter reruns both with `nadcore`. The `cpu` profile is a scaled-down version (LeNet, a
# genuine subset of CIFAR-10, few epochs, three seeds) that runs on a laptop in minutes; the
# `paper` profile uses the paper's ResNet-18 settings and is meant for a GPU and the full dataset.
# Every table, figure, number and verdict below is computed by the code from this run, and every
# claim gets a verdict computed from a criterion registered before the networks are trained
# (`nadcore/chapters/cifar10/claims.py`).

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (GPU)
seed = 0  # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"  # "auto", "cpu" or "cuda"
model = "lenet"  # registry name or "package.module:factory"; the paper: "resnet18"
data_root = None  # folder of the official cifar-10-batches-py ($NADCORE_DATA_ROOT)
download = False  # let torchvision download the full CIFAR-10 into data_root
subset_root = None  # folder holding cifar10_subset.npz (None: default search)
knobs = None  # settings to override, e.g. {"epochs": 30} (a dict or JSON)

# %%
from IPython.display import Markdown

from nadcore.book import setup
from nadcore.chapters.cifar10.study import Study
from nadcore.data import cifar, poisoning
from nadcore.nads import complete_basis

ch = setup("04_cifar10", profile=profile, seed=seed, device=device, knobs=knobs,
           model=model, data_root=data_root, download=download, subset_root=subset_root)
study = Study(ch, model)

# %% [markdown]
# ## Data
#
# `nadcore.data.cifar.load_cifar10` takes the full CIFAR-10 through `torchvision` when it finds it under
# `data_root` (or downloads it when `download=True`). Without it, it falls back to the genuine
# subset shipped with the project: the first images of each official batch file, byte-identical to
# the originals, with their checksum verified. No image is ever synthesised. Images are kept on the
# $[0, 1]$ scale; the per-channel normalisation of the authors' code (mean
# $(0.4914, 0.4822, 0.4465)$, std $(0.247, 0.243, 0.261)$) is applied *after* poisoning, as their
# `TransformLayer` did inside the network.

# %% tags=["nbval-check-output"]
data = study.load_data(root=data_root, subset_root=subset_root, download=download)
print(data.summary())

# %% [markdown]
# ## Which NADs
#
# The NADs are those of a **one-channel copy** of the architecture with a scalar output, as in the
# paper: vectors of $32 \times 32 = 1024$ pixels, used in each colour channel. They come from the
# book's one rule (`ch.nads`): chapter 2's secant NADs on the same profile when chapter 2 computes
# them for this architecture (shared through the cache, so they are free when chapter 2 ran first),
# else the authors' published NADs, else secant NADs computed here. A published file holds 1023 of
# the 1024 NADs; `complete_basis` adds the missing direction (the least preferred one) as the
# orthogonal complement, placed last, so that the basis is a full orthogonal matrix.

# %% tags=["nbval-check-output"]
nad_result, nad_source = ch.nads(model)
U = complete_basis(nad_result.nads)   # (1024, 1024), one NAD per row, orthonormal
print(study.basis_summary(U, nad_source))

# %%
fig = study.draw_nads(U)

# %% [markdown]
# ## The carrier
#
# The authors' `poison_cifar.py` builds one carrier per class from two consecutive NADs and the
# three colour channels. With $u_k$ the $k$-th NAD, class $t \in \{0, \dots, 9\}$ uses NAD
# $u_{i + \lfloor t/6 \rfloor}$ placed in channel $t \bmod 3$ (zeros in the other two), with sign
# $s_t = 2(t \bmod 2) - 1$:
#
# ```{literalinclude} ../../nadcore/data/poisoning.py
# :pyobject: carrier_assignment
# ```
#
# Call this unit vector $c_t \in \mathbb{R}^{3 \times 32 \times 32}$. Poisoning *substitutes* the
# component of each training image along its class's carrier:
#
# $$ x' = x + \left(s_t\,\epsilon - \langle x, c_t\rangle\right) c_t,
#    \qquad\text{so}\qquad \langle x', c_t\rangle = s_t\,\epsilon, $$
#
# and nothing changes orthogonally to $c_t$:
#
# ```{literalinclude} ../../nadcore/data/poisoning.py
# :pyobject: poison
# ```
#
# The ten (NAD, channel, sign) triples are all different, so the carriers alone separate the ten
# classes of the training set. The test set stays clean. The cell below checks the two properties
# of the substitution on real images.

# %% tags=["nbval-check-output"]
carriers = study.carrier_table()
xb, yb = data.x_train[:512], data.y_train[:512]
print(carriers.to_string(index=False) + "\n\n"  # one print per checked cell: one output
      + study.substitution_check(xb, yb, U))

# %% [markdown]
# ### Is the poison visible?
#
# The reviewers asked whether the modification can be seen. Setting the component to $\pm\epsilon$
# adds very little, but it also *removes* whatever the image had along the carrier, and that is not
# small when a NAD resembles a smooth, mostly positive pattern: then $\langle x, c_t\rangle$
# measures a large part of the channel's brightness. `carrier_visibility` measures, on the first
# 512 training images, the average size of the change for each carrier position (pixel values on
# the $[0, 1]$ scale; `relative` divides by the mean norm of a clean image) and how close the
# carrier's NADs are to a constant image (`dc_cosine`, the larger $|\cos|$ of NADs $i$, $i+1$ with
# the all-ones image). The figure shows a few images, with the difference amplified by the factor
# in each column's title.

# %% tags=["nbval-check-output"]
vis = study.visibility(xb, yb, U)
print(study.visibility_table(vis))

# %%
fig = study.draw_visibility(data, U, vis)

# %% [markdown]
# When a carrier NAD is a smooth, same-signed blob (a `dc_cosine` near 1), removing the component
# along the carrier changes the brightness of one colour channel noticeably, even though the
# inserted value $\pm\epsilon$ itself is tiny: the poison is then visible as a colour cast. An
# oscillating NAD gives a faint texture instead, and a NAD concentrated on a few pixels changes only
# those. The table says which kind each of this run's carriers is, and how large its change is
# (`relative`): it is the substitution, not $\epsilon$, that sets the size of the change.
#
# ## Flipping the NAD representation
#
# With $U$ the $1024 \times 1024$ orthogonal matrix whose columns are the NADs, and $\mathrm{flip}$
# the reversal of a vector's entries,
#
# $$ x' = U\,\mathrm{flip}(U^\top x) = U R U^\top x $$
#
# ($R$ the reversal permutation) moves the content along the first NAD to the last one and vice
# versa. $U R U^\top$ is orthogonal, symmetric and its own inverse: the flipped dataset carries
# exactly the same information, and a fully connected network, whose initialisation barely cares
# about the orientation of input space, should be unaffected.
#
# ```{literalinclude} ../../nadcore/data/poisoning.py
# :pyobject: flip_matrix
# ```
#
# Two choices are ours, since the paper does not spell them out (the reviewers asked for details):
#
# * **Per colour channel.** The NADs are 1024-dimensional (those of a one-channel network), so the
#   same flip is applied to each channel separately; mixing channels would be an arbitrary extension.
# * **After normalisation.** The flip acts on the normalised images. On the raw $[0, 1]$ pixels the
#   bright mean of every image, a large constant component, would be carried to the last NADs and
#   dominate the flipped images; after subtracting the per-channel mean, what is moved around is
#   the images' actual content.
#
# ```{literalinclude} ../../nadcore/data/poisoning.py
# :pyobject: flip_representation
# ```
#
# The check below tests the algebra on real images and measures what the flip does to them:
# the share of an image's energy along the first 64 NADs (of each channel) before and after.

# %% tags=["nbval-check-output"]
xn = cifar.normalise(data.x_train[:256])
xf = poisoning.flip_representation(xn, U)
energy = study.flip_energy(xn, xf, U)
print(study.flip_checks(xn, xf, U) + "\n" + study.energy_table(energy))

# %%
fig = study.draw_flipped(xn, xf, data.y_train, energy)

# %% [markdown]
# The flip sends the images' content from the first NADs to the last ones, so the flipped images
# show where the model's last NADs live (the figure of the NADs above shows them); for a CNN these
# tend to be the pixels that the fewest convolution windows see, along the border and in the
# corners.

# %% [markdown]
# ## The runs and the claims
#
# Every network is a job of the book's runner (cached, resumable, spread over `workers`
# processes), and every job trains one network per seed. Seed $s$ fixes the initial weights and the
# batch order, and they are the **same** for every version of the data: the clean baseline, the
# poisoned sets and the flipped set are compared pairwise, seed by seed, and each claim is a
# criterion on the paired per-seed difference, with a 95% t-interval over the seeds.
#
# * **Fig. 7**: `model` on the clean training set (the baseline) and on each poisoned set, for
#   `epochs` epochs. Accuracy is measured on the **clean** test set, and, as a diagnostic, on the
#   test images carrying the same carrier: a high accuracy there means the network did pick up the
#   carrier.
# * **Fig. 8**: `model` on the original and the flipped representation, for `flip_epochs` epochs
#   and `flip_seeds` seeds, so that both come close to fitting their training set, the regime of the paper's comparison
#   ("approximately 0% training error"). If either does not fit, the verdict is inconclusive. As a
#   control, a fully connected MLP is trained on both representations, flipped with the same basis,
#   once for each of `control_seeds` seeds.
#
# The criteria are registered before any network is trained, and printed below. The paper gives
# Figs. 7 and 8 as plots and states their results in words, so the criteria read the words at
# their strength:
#
# * **Fig. 7** is measured on a scale that carries over from the paper's ResNet-18 on the full
#   CIFAR-10 to this run's network and data: the share of what the clean network learned above
#   chance (10%) that a carrier takes away, $(\text{baseline} - \text{poisoned}) /
#   (\text{baseline} - 0.1)$. The blog post says that with the carrier on the first NAD the
#   network "fully overfits" (a share of 1); the paper, that it "ignores most generalising
#   features": the criterion asks for more than half. With the carrier at the end the network "can
#   almost perfectly generalise" (a share of 0): at most a tenth may be lost.
# * A carrier counts as **picked up** when test images carrying it are classified at least 20
#   points better than clean ones (our test of the paper's explanation).
# * **Fig. 8**'s "significantly lower" accuracy on the flipped representation has no number in
#   the text: a loss of at least 5 points of test accuracy. The MLP control counts as unaffected
#   when it loses less than that. It gets `control_seeds` seeds: its two runs of a pair are less
#   tightly coupled than the CNN's (the flip rotates the input space, and the MLP's uniform
#   initialisation is not rotation-invariant, so the pair behaves like two different
#   initialisations), and an MLP costs a fraction of a CNN.
#
# Each claim is reproduced only when the whole 95% interval satisfies its criterion; the intervals
# of accuracies include the binomial noise of the finite test set besides the spread over seeds.

# %% tags=["nbval-check-output"]
print(study.criteria())

# %%
jobs = study.jobs(U)                   # Figs. 8 and 7, the longer Fig. 8 runs first
runs, cpu_seconds = study.train(jobs)
print(f"{len(jobs)} jobs, {len(runs)} networks trained (or read from the cache)")

# %% [markdown]
# ## Poisoning (paper Fig. 7)
#
# The table gives, per carrier position, the mean over seeds of the final training accuracy, the
# clean test accuracy and the accuracy on test images carrying the same carrier; the figure shows
# the test accuracies with 95% intervals over the seeds (each seed a dot) against the clean
# baseline (line and band).

# %% tags=["nbval-check-output"]
fig7 = study.fig7(runs)
print(study.fig7_summary(fig7))

# %%
fig = study.draw_fig7(fig7)

# %% [markdown]
# In the paper (ResNet-18, full CIFAR-10, 50 epochs), test accuracy with the carrier on the first
# NADs is "very low" and climbs back towards the clean baseline as the carrier moves to later NADs
# (the blog post: "a gradual increase"). The three claims below test the two ends of that curve,
# seed by seed against the same seed's baseline. A carrier that the network picked up shows as a
# test accuracy *with* the carrier far above the clean one; a carrier it ignored leaves the two
# equal. The middle of the curve is not part of a claim (the table and the figure show it): the
# ordering of NADs with close eigenvalues, estimated from fewer networks than the paper's, is
# coarse.

# %% tags=["nbval-check-output"]
ch.claim("fig7-early-carriers-hurt", **study.share_lost_early(fig7, nad_result))
ch.claim("fig7-late-carriers-harmless", **study.share_lost_late(fig7, nad_result))
ch.claim("fig7-carrier-learned", **study.carrier_gain(fig7, nad_result))
print("test accuracies per seed (early, late: means over those carriers; carrier gain: "
      "with minus without the carrier; the shares of the above-chance accuracy lost "
      "are the claims' values above)")
print(study.fig7_per_seed(fig7).round(3).to_string())

# %% [markdown]
# ### The paper's network
#
# The paper's Fig. 7 is ResNet-18's. A ResNet-18 run takes minutes even at width 16 on two
# cores, so this build does not train it: the cpu campaign does, off the build
# (`scripts/run_campaign.py --campaign cpu`, its Fig. 7 stage), on the same images, carriers,
# $\epsilon$, recipe and epochs as chapter 4's `cpu` profile gives `model` above, poisoned along
# the authors' published NADs of the full-width ResNet-18 (completed to a basis as above). It
# commits its runs (`results/cpu/04_cifar10/fig7.csv`), one seed at a time. The same functions
# summarise, draw and score them; the claims name the width, the seeds and the bundle. A seed
# enters only once its baseline and every carrier have run, and the intervals are over those
# seeds.

# %% tags=["nbval-check-output"]
net, net_runs = study.campaign("fig7")
fig7_net = net.fig7(net_runs)
print(net.criteria() + "\n\n" + net.fig7_summary(fig7_net))

# %%
fig = net.draw_fig7(fig7_net)

# %% tags=["nbval-check-output"]
for claim, kw in net.fig7_evidence(fig7_net).items():
    ch.claim(claim, **kw)
print(net.fig7_per_seed(fig7_net).round(3).to_string())

# %% [markdown]
# ## Flipping (paper Fig. 8)
#
# The same recipe on the original and on the flipped representation (training and test sets both
# flipped), `flip_epochs` epochs, the same seeds; the table gives means over the seeds, the figure
# each seed as a dot and the mean final training accuracy as a dash.

# %% tags=["nbval-check-output"]
fig8 = study.fig8(runs)
print(study.fig8_summary(fig8))

# %%
fig = study.draw_fig8(fig8)

# %% [markdown]
# The paper reports that both representations are fitted ("approximately 0% training error") and
# that the flipped one generalises markedly worse, for every CNN it tried. The claim on `model`
# requires, as a precondition, that every network of the pair reached a final training accuracy
# of at least `fit`: a network that has not yet fitted the flipped images only shows that the flip
# slows down optimisation (the directional bias of the paper's Fig. 2), which is not the same as
# worse generalisation at equal fit. The control's claim is ours, not the paper's.

# %% tags=["nbval-check-output"]
ch.claim("fig8-flip-hurts-cnn", **study.flip_loss_cnn(fig8, nad_result))
if "mlp" in study.flip_names:
    ch.claim("fig8-flip-mlp-unaffected", **study.flip_loss_mlp(fig8, nad_result))
print("test accuracy on the original minus on the flipped representation, per seed\n"
      + study.flip_loss_per_seed(fig8).round(3).to_string())

# %% [markdown]
# ### The paper's CNNs
#
# The paper flips CIFAR-10 for ResNet-18, VGG-11, DenseNet-121 and LeNet. The three big networks
# are trained by the cpu campaign, off the build, at the widths of its Fig. 8 stages (each claim
# names its network's), on the same images, recipe and `flip_epochs` as chapter 4's `cpu` profile
# gives `model` above. Each is flipped with the authors' published NADs of the full network: the
# narrow network's own NADs are not published, and chapter 2's width study measures how far a
# narrow network's NADs agree with the full one's. The same functions summarise, draw and score
# the runs; a network's seed enters once both its representations have run, and a network
# without one is left out.

# %% tags=["nbval-check-output"]
nets, nets_runs = study.campaign("fig8")
fig8_nets = nets.fig8(nets_runs)
print(nets.criteria() + "\n\n" + nets.fig8_summary(fig8_nets))

# %%
fig = nets.draw_fig8(fig8_nets)

# %% tags=["nbval-check-output"]
for claim, kw in nets.fig8_evidence(fig8_nets).items():
    ch.claim(claim, **kw)
print(nets.flip_loss_per_seed(fig8_nets).round(3).to_string())

# %% [markdown]
# ## Reading the results
#
# Both experiments ask the same question from two sides: does a CNN's preference for its first
# NADs steer which features of natural images it learns? Poisoning puts an easy shortcut at a
# chosen NAD position and asks whether the network takes it; flipping moves the images' own
# content to the other end of the NAD ordering.
#
# What this run measured (every number computed from the tables above), and the verdicts:

# %%
Markdown(study.reading(fig7, fig8) + "\n\n" + ch.verdict_summary(["fig7", "fig8"]))

# %% [markdown]
# The flipped pairs get `flip_epochs` epochs so that both representations can be fitted, and the
# claim checks the fit before comparing: a network that has not fitted the flipped images shows
# only that the flip slows down optimisation. On `smoke` (a few hundred images, ten epochs, two
# seeds) the verdicts mean nothing; they only show that the code runs.
#
# Caveats at this scale. On `cpu`, LeNet trains on a tenth of the training set, so its clean
# baseline (printed above) leaves less room between "learned the real features" and "learned only
# the carrier" than the paper's ResNet-18 on the full set; the share-of-accuracy scale of the
# Fig. 7 claims accounts for the baseline, not for the network. The poisoning runs get `epochs`
# epochs, a small fraction of the paper's SGD steps (the scorecard gives each claim's
# `budget_fraction`). And the effects are those of LeNet and its NADs: the paper's figures are for
# ResNet-18 (Fig. 7) and several CNNs (Fig. 8). The paper's own setting is
# `-p profile paper -p model resnet18 -p data_root DIR` (a GPU and the full CIFAR-10): ResNet-18,
# $\epsilon = 0.05$, 50 epochs, `max_lr` 0.21, momentum 0.9, weight decay $5 \cdot 10^{-4}$, and
# the flipping experiment for ResNet-18, VGG-11, DenseNet-121 and LeNet, each with its own NADs.

# %% [markdown]
# ## Reproducibility

# %%
d = data.description
ch.finish(data=f"{d['name']}; {d['n_train']:,} train / {d['n_test']:,} test images",
          extra={"NADs": nad_source,
                 "training CPU time": f"{cpu_seconds:.0f} s over {len(jobs)} jobs"})
