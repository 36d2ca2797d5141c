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
# # Pooling and aliasing
#
# Why would a deep convolutional network find some linearly separable problems much harder than
# others? Ortiz-Jimenez, Modas, Moosavi-Dezfooli and Frossard (*Neural Anisotropy Directions*,
# NeurIPS 2020, Sec. 2.1-2.2) point at the pooling layers and describe two mechanisms, both of
# which single out particular directions of the input space:
#
# 1. **loss of information** (Theorem 1): after subsampling, the discriminative frequency is
#    folded together with other frequencies that carry only noise, so even the Bayes-optimal
#    classifier does worse for some frequencies than for others (paper Fig. 4a);
# 2. **conditioning of the optimisation** (Lemma 1): even when no information is lost, the
#    curvature of the loss along the discriminative coordinate depends on the frequency, and SGD
#    takes much longer at frequencies the pooling prefilter attenuates (paper Fig. 4b).
#
# This chapter derives both statements for one-dimensional signals of length $D = 128$ pooled by
# $S = 4$ (the setting of the paper's Fig. 4), checks Theorem 1 against a simulation in pixel space,
# and trains the paper's deep linear model of pooling. The closed forms live in `nadcore.theory`;
# this chapter's runs, quantities and figures in `nadcore.chapters.pooling`.

# %% tags=["parameters"]
profile = "cpu"  # "smoke" (tests), "cpu" (laptop, minutes), "paper" (the papers' scale)
seed = 0  # first seed; the profile's `seeds` runs use seed, seed + 1, ...
device = "auto"  # "auto", "cpu" or "cuda"
knobs = None  # settings to override, e.g. {"mc_samples": 10000} (a dict or JSON)

# %%
import numpy as np
import pandas as pd
from IPython.display import Markdown

from nadcore.book import setup
from nadcore.chapters.pooling import figures as plots
from nadcore.chapters.pooling import study
from nadcore.runtime import generator
from nadcore.theory import linear_pooling
from nadcore.theory import pooling as theory

ch = setup("01_pooling", profile=profile, seed=seed, device=device, knobs=knobs)
cfg = ch.cfg
D, S = cfg["D"], cfg["S"]
M = D // S
m_hat = theory.average_pooling_prefilter(D, S)

# %% [markdown]
# ## The data model $\mathcal{D}(v)$ and the pooling layer in the Fourier domain
#
# The paper studies the simplest possible classification problem with a single discriminative
# direction $v \in \mathbb{S}^{D-1}$: a sample $(x, y) \sim \mathcal{D}(v)$ is
#
# $$x = \epsilon\, y\, v + w, \qquad y \in \{-1, +1\} \text{ equiprobable}, \qquad
#   w \sim \mathcal{N}\big(0, \sigma^2 (I_D - v v^T)\big).$$
#
# The noise is orthogonal to $v$, so the problem is linearly separable by $\operatorname{sign}(v^T x)$
# with 100% accuracy, whatever $\epsilon$ and $\sigma$. The question is what a layer in front of
# the classifier does to that.
#
# A linear pooling layer (average pooling, say) is a circular convolution with a prefilter $h$
# followed by keeping one sample out of $S$. Writing $\hat{u}$ for the discrete Fourier transform
# of $u$ and $M = D/S$, the output $z$ satisfies the paper's eq. (1):
#
# $$\hat z = A\,(\hat m \odot \hat x), \qquad A = \tfrac{1}{S}\,[\,I_M \;\; I_M \;\cdots\; I_M\,]
#   \in \mathbb{R}^{M \times D}, \qquad
#   \hat z[t] = \frac{1}{S} \sum_{k=0}^{S-1} \hat m[t + kM]\, \hat x[t + kM],$$
#
# with $\hat m = \hat h$ the prefilter's spectrum and indices taken modulo $D$. Subsampling
# *folds* the $S$ input frequencies $t, t+M, \dots, t+(S-1)M$ onto the single output frequency $t$:
# this is aliasing. We use numpy's non-unitary DFT, $\hat u[l] = \sum_n u[n] e^{-2\pi i ln/D}$,
# for which eq. (1) holds exactly with the $1/S$ above and the averaging prefilter has
# $\hat m[0] = 1$ and $|\hat m[l]| = |\sin(\pi l S/D) / (S \sin(\pi l / D))|$, a Dirichlet kernel that
# vanishes at the multiples of $M$. The cell below checks eq. (1) on a random signal against the
# real pooling matrix used in the simulations.

# %% tags=["nbval-check-output"]
P = theory.pooling_operator(D, S)
x = np.random.default_rng(seed).standard_normal(D)
z_hat = theory.aliasing_matrix(D, S) @ (m_hat * np.fft.fft(x))  # eq. (1)
eq1_error = np.abs(np.fft.fft(P @ x) - z_hat).max()
print("eq. (1) holds: max |FFT(P x) - A (m_hat * FFT(x))| < 1e-12:", eq1_error < 1e-12)
print("|m_hat[l]| for l = 0, 4, ..., 32:", np.round(np.abs(m_hat[: M + 1 : 4]), 3))

# %% [markdown]
# ## Theorem 1: the best achievable accuracy after pooling
#
# Take $v = v_\ell$ aligned with the $\ell$-th Fourier frequency. The paper states the result for
# the complex Fourier atom $v_\ell = F^{-1}(e_\ell)$. With $\mathcal{D}(v)$ normalised as above, it
# reads:
#
# $$\text{best accuracy after pooling} = 1 - Q\!\left(\frac{\epsilon\,\gamma(\ell)}{\sigma}\right)
#   = \Phi\!\left(\frac{\epsilon\,\gamma(\ell)}{\sigma}\right), \qquad
#   \gamma^2(\ell) = \frac{|\hat m[\ell]|^2}{\sum_{k=1}^{S-1} |\hat m[\ell + kM]|^2},$$
#
# with $Q$ the standard normal tail and $\Phi = 1 - Q$ its distribution function.
#
# **Derivation sketch (real data).** Images are real, so we work with the real unit vector
# $v_\ell \propto \cos(2\pi \ell n / D + \varphi)$. Its spectrum sits on the conjugate pair
# $\{\ell, -\ell\}$, with $\hat v_\ell[\ell] = \sqrt{D/2}\, e^{i\varphi}$. Put
# $x = \epsilon y v_\ell + w$ into eq. (1).
#
# * For a *generic* $\ell$ the bins $\ell$ and $-\ell$ fold onto two different output bins,
#   $t = \ell \bmod M$ and $M - t$. Their values are complex conjugates of each other, so
#   $\hat z[t]$ holds all the information.
# * $\hat z[t]$ receives the signal $\frac{1}{S}\hat m[\ell]\,\epsilon y\,\hat v_\ell[\ell]$ and
#   the noise of the $S-1$ aliased input bins $\ell + kM$, $k = 1, \dots, S-1$, each weighted by
#   $\hat m[\ell + kM]/S$. The real noise $w$ has independent, circularly symmetric Fourier
#   coefficients there, each of variance $D\sigma^2$.
# * The noise left in bin $\ell$ itself is the sine companion of the cosine: $w \perp v_\ell$
#   removes the cosine, not the sine. It is in quadrature with the signal (rotated by $90^\circ$ in the
#   complex plane) and costs nothing.
# * Every other output bin collects only noise from input bins without signal, independent of
#   $\hat z[t]$, so those bins are useless to any classifier.
#
# Projecting $\hat z[t]$ onto the signal's direction in the complex plane leaves a scalar problem.
# The means are $\pm \epsilon |\hat m[\ell]|\, c$ and the Gaussian noise has variance
# $\sigma^2 \sum_{k \ge 1} |\hat m[\ell + kM]|^2\, c^2$, with the same $c^2 = D/(2S^2)$ in both.
# The Bayes error is therefore $Q(\epsilon\gamma(\ell)/\sigma)$. Two limits: if nothing aliases
# onto bin $\ell$ ($\gamma = \infty$), the accuracy stays 1, and if the prefilter kills frequency
# $\ell$ ($\hat m[\ell] = 0$), it drops to chance, $1/2$. The paper states the theorem for the
# complex atom $F^{-1}(e_\ell)$ and its noise-free bin $\ell$. The same closed form holds for
# real data at every generic $\ell$, and for $\ell \in \{0, D/2\}$.
#
# **Where the closed form is not exact.** The argument breaks when $2\ell \equiv 0 \pmod M$ with
# $\ell \notin \{0, D/2\}$, here $\ell \in \{16, 32, 48\}$ (at $\ell = 32$ the box filter removes
# the signal anyway, and both forms give chance). Then $-\ell$ is itself one of the aliases
# of $\ell$, the output bin $t \in \{0, M/2\}$ is real, and the two halves of the cosine interfere,
# together with the quadrature noise. With $\psi = \varphi + \arg \hat m[\ell]$,
#
# $$\gamma_{\text{real}}^2(\ell) = \frac{2|\hat m[\ell]|^2 \cos^2\psi}
#   {2|\hat m[\ell]|^2 \sin^2\psi + \sum_{i \in K_\ell \setminus \{\ell, -\ell\}} |\hat m[i]|^2},
#   \qquad K_\ell = \{\ell + kM\}_{k=0}^{S-1},$$
#
# which depends on where the cosine sits relative to the pooling grid. The paper's $\gamma$ is the
# value at $\cos^2\psi = \tfrac12$.
#
# **The exact answer for any linear layer.** For $z = Px$ with any matrix $P$ the two classes are
# Gaussians with means $\pm\epsilon P v$ and shared covariance $\Sigma = \sigma^2 P (I - vv^T) P^T$,
# so the Bayes accuracy is $\Phi\big(\epsilon \sqrt{b^T K^{+} b}/\sigma\big)$ with $b = Pv$,
# $K = P(I - vv^T)P^T$. It is 1 when $b$ has a component outside the range of $K$. For average
# pooling $PP^T = I_M/S$, and Sherman-Morrison gives the compact form
# $\gamma^2 = S\|Pv\|^2 / (1 - S\|Pv\|^2)$. `theory.bayes_accuracy_linear` implements the general
# formula. The next cell compares it with the closed forms for every $\ell \in [0, D/2]$.

# %% tags=["nbval-check-output"]
eps, phase = cfg["eps"], cfg["phase"]
sig = cfg["table_sigma"]
ells = np.arange(D // 2 + 1)
closed = theory.bayes_accuracy_after_pooling(ells, m_hat, S, eps, sig)
real_cf = theory.bayes_accuracy_after_pooling(ells, m_hat, S, eps, sig, phase=phase)
cosines = [theory.real_fourier_direction(l, D, phase) for l in ells]
exact = theory.bayes_accuracy_map(P, cosines, eps, sig)
differ = np.abs(exact - closed) > 1e-9
real_residual = np.abs(exact - real_cf).max()
generic_residual = np.abs(exact - closed)[~differ].max()
print(f"eps={eps}, sigma={sig}, real cosine directions with phase {phase}")
# the residuals are rounding errors (about 1e-15, differing by CPU): shown as bounds
print("max |exact - gamma_real closed form| over all l:",
      study.rounding_bound(real_residual))
print("max |exact - Theorem 1| over generic l:         ",
      study.rounding_bound(generic_residual))
print("frequencies where Theorem 1 and the real-data optimum differ:")
for l in ells[differ]:
    print(f"  l={l:3d}  Theorem 1: {closed[l]:.4f}   exact (cosine): {exact[l]:.4f}")
assert real_residual < 1e-9 and generic_residual < 1e-9
assert set(ells[differ]) <= {l for l in ells if (2 * l) % M == 0}
blind = [l for l in ells if l % M == 0 and l > 0]
ch.claim("thm1-anisotropic", **study.thm1_anisotropic(closed))
ch.claim("thm1-blind", **study.thm1_blind(exact, blind))

# %% [markdown]
# ## Checking Theorem 1 by simulation
#
# The simulation works in pixel space and uses none of the algebra above. For each frequency, it
# draws `mc_samples` samples of $\mathcal{D}(v_\ell)$, applies the real $M \times D$
# average-pooling matrix ($z_j = \frac1S \sum_{i<S} x_{jS+i}$) and classifies with the optimal
# linear rule for the known class covariance (LDA with $w = \Sigma^+ \mu$). The measured accuracy
# must match the exact optimum within sampling error. The $z$-score below is
# $|\text{MC} - \text{exact}| / \sqrt{p(1-p)/n}$ with $p$ the exact value; the claim asks for
# $|z| \le 4$ at every (frequency, $\sigma$) pair, which a pair exceeds with probability $6 \cdot
# 10^{-5}$ when the theorem holds.

# %%
rows = study.fig4a_monte_carlo(cfg, seed)
mc = pd.DataFrame(rows)

# %% tags=["nbval-check-output"]
print(f"n = {cfg['mc_samples']} samples per frequency, eps = {eps}, sigma = {sig}")
agreement = study.monte_carlo_table(mc, sig)
print(agreement.to_string(index=False, float_format="{:.4f}".format))
print(mc.groupby("sigma")["z"].agg(["count", "max"]).round(2).to_string())
ch.claim("thm1-monte-carlo", **study.thm1_monte_carlo(mc, cfg["mc_samples"]))

# %% [markdown]
# The figure redraws the paper's Fig. 4a with this run's numbers. The lines are Theorem 1 for
# three noise levels, the crosses the simulation ($\pm 2$ standard errors) and the open circles the
# exact optimum for the real cosine where it departs from the closed form. The grey verticals mark
# multiples of $M$.

# %%
sigmas = cfg["sigmas"]
fig = plots.plot_bayes_accuracy_after_pooling(rows, D, S, eps, sigmas, phase=phase)
ch.figure_data("fig4a", mc[["sigma", *study.MC_COLUMNS]])

# %% [markdown]
# Pooling is an *anisotropic* lossy channel. Low frequencies pass almost untouched:
# $\gamma(0) = \infty$, since the box filter vanishes at every alias of the DC. Accuracy then falls
# as $\ell$ grows, reaches chance at $\ell = M = 32$ and $\ell = D/2 = 64$ (zeros of the box filter),
# and recovers only a little in between, where the signal competes with a strong low-frequency
# alias (for $\ell = 40$ the alias $\ell - M = 8$ sits almost unattenuated in the same output bin).
# The information is not lost because the layer is small ($M = 32$ outputs could carry any single
# direction). It is lost because the noise at other frequencies is folded onto the discriminative
# one. The open circles at $\ell = 16, 48$ show a subtlety of real data that the complex-valued
# statement hides: there the optimum depends on the phase of the cosine relative to the pooling
# grid, from chance up to $\Phi(\epsilon\sqrt{2|\hat m[\ell]|^2/\sum_{\text{others}}|\hat m|^2}/\sigma)$.
#
# A note on the formula: the extracted text of the paper shows an extra factor $S$ in the
# denominator of $\gamma^2$. With $\mathcal{D}(v)$ normalised as above ($\|v\| = 1$, noise
# $\sigma^2(I - vv^T)$), the exact computation for a linear layer (asserted above to equal the
# closed form) has no such factor, and the simulation tests that form (claim `thm1-monte-carlo`).

# %% [markdown]
# ## Lemma 1: pooling also conditions the optimisation
#
# Theorem 1 concerns the *best* classifier. Networks are trained by SGD, and the paper's second
# point is that the architecture shapes the loss landscape even when nothing is lost. It studies an
# idealised deep linear model of pooling in the spectral domain,
#
# $$f_{\theta,\phi}(x) = \theta^T A\,(m \odot \phi \odot x),$$
#
# where $\phi \in \mathbb{R}^D$ stands for the spectral response of a long stack of convolutions,
# $m$ for the pooling prefilter and $\theta \in \mathbb{R}^M$ for a final fully connected layer. The
# data are $x = \epsilon y e_\ell + w$ with isotropic $w \sim \mathcal{N}(0, \sigma^2 I_D)$, and the
# loss is $J = (y - f_{\theta,\phi}(x))^2$. This model can reach the same loss for every $\ell$:
# $\phi = e_\ell / m[\ell]$ removes all aliasing. We use a real-valued version with $m = |\hat m|$,
# the magnitude of average pooling's prefilter.
#
# **Lemma 1.** For $\theta \sim \mathcal{N}(0, \sigma_\theta^2 I_M)$, the expected Hessian with
# respect to $\phi$ is
#
# $$\mathbb{E}\,\nabla^2_\phi J = \frac{2\sigma_\theta^2}{S^2}\Big(\underbrace{\epsilon^2 m^2[\ell]\,
#   \operatorname{diag}(e_\ell)}_{\text{signal}} + \underbrace{\sigma^2 \operatorname{diag}(m^2)}_{\text{noise}}\Big).$$
#
# The proof takes three lines. $f$ is linear in $\phi$, $f = g^T\phi$ with
# $g = (A^T\theta) \odot m \odot x$, so $\nabla^2_\phi J = 2 g g^T$. Then
# $\mathbb{E}[(A^T\theta)_t (A^T\theta)_{t'}] = \sigma_\theta^2/S^2$ if $t \equiv t' \pmod M$ and 0
# otherwise, and $\mathbb{E}[x_t x_{t'}] = \epsilon^2 [t = t' = \ell] + \sigma^2 [t = t']$. The paper
# writes the result without the $1/S^2$ that our $A$ carries. It scales both terms alike and cancels
# in the quantity that matters, the ratio of the signal curvature to the largest noise curvature:
#
# $$\zeta(\ell) = \frac{\epsilon^2 m^2[\ell]}{\sigma^2 \max_t m^2[t]}.$$
#
# SGD's step size is limited by the sharpest direction of the landscape (the noise term at the
# frequencies the prefilter passes), while progress towards the solution is driven by the signal
# term at $\ell$. When $\zeta(\ell) \gg 1$ a stable step size also moves fast along the
# discriminative coordinate. When $\zeta(\ell) \ll 1$ it crawls. First, a check of the lemma: the
# empirical average of $2gg^T$ over random $\theta$ and data against the formula. The entries of
# $gg^T$ are products of four Gaussians and heavy-tailed, so the tolerance is a few times
# $1/\sqrt{n}$: $12/\sqrt{n}$ for $n$ draws.

# %% tags=["nbval-check-output"]
m = np.abs(m_hat)
le, ls, s_init = cfg["lemma_eps"], cfg["lemma_sigma"], cfg["lemma_init"]
ell_h = cfg["lemma_ells"][-1]
H = linear_pooling.expected_hessian_phi(ell_h, m, le, ls, s_init, S)
n_h = cfg["hessian_samples"]
H_emp = linear_pooling.empirical_hessian_phi(ell_h, m, le, ls, s_init, S, n_h,
                                             generator(seed, 2, device=ch.device))
rel = np.abs(H_emp - H).max() / np.abs(H).max()
print(f"l = {ell_h}: max |E_emp - Lemma 1| / max |Lemma 1| = {rel:.3f} "
      f"({n_h} draws of theta and x)")
print(f"signal + noise curvature at l: Lemma 1 {H[ell_h, ell_h]:.5f}, "
      f"empirical {H_emp[ell_h, ell_h]:.5f}")
ch.claim("lemma1-hessian", **study.lemma1_hessian(rel, n_h))

# %% [markdown]
# Now train the model with plain minibatch SGD. The hyperparameters are in the profile: learning
# rate `lemma_lr`, batch `lemma_batch`, initial scale `lemma_init` for both $\theta$ and $\phi$,
# and `lemma_train` training samples. Each frequency is trained once per seed (`seeds`), each
# seed with its own data, initialisation and minibatches, and we plot the mean training loss. The
# table gives the first iteration at which the loss falls halfway between chance (1) and the best
# linear loss $\sigma^2/(\epsilon^2+\sigma^2)$, as the median over seeds.

# %%
runs = study.fig4b_runs(cfg, m, seed, ch.device, repeats=len(ch.seeds))
fig = plots.plot_linear_pooling_training(runs, logx=True)
ch.figure_data("fig4b", study.fig4b_curves(runs, ch.seeds, cfg["lemma_iters"]))

# %% tags=["nbval-check-output"]
level = 0.5 * (1 + runs[0]["bayes_loss"])
# a run that never gets there counts as one step past the budget
censored = cfg["lemma_iters"] + 1
t_conv = study.convergence_iterations(runs, level, censored)  # (frequencies, seeds)
table = study.fig4b_table(runs, m, t_conv, censored)
print(f"iterations until the loss < {level:.2f}, over {len(ch.seeds)} seeds")
print(table.to_string(index=False, float_format="{:.3f}".format))
ch.claim("fig4b-zeta-speed", **study.fig4b_zeta_speed(runs, t_conv, ch))

# %% [markdown]
# Lemma 1 is a statement about curvature at initialisation, not about the whole trajectory. The
# product $\theta_{\ell \bmod M}\,\phi_\ell$ grows multiplicatively from a small initialisation,
# which suggests escape times that depend on $m[\ell]$ more like $1/m[\ell]$ than like
# $1/m^2[\ell] \propto 1/\zeta$. What this run measured (every number below is computed from the
# table above):

# %%
Markdown(study.fig4b_summary(runs, table, t_conv, censored, len(ch.seeds)))

# %% [markdown]
# The paper points to the same slowdown for real CNNs in its Fig. 2 (chapter 3): there, directions
# the architecture attenuates are predicted to be learned last, or not at all.

# %% [markdown]
# ## Reproducibility

# %%
ch.finish()
