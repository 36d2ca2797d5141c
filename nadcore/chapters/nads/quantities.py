"""Chapter 2's quantities: the NADs in the Fourier domain against Fig. 1 (the paper's Fig. 5
reading), ResNet-18's combs of spikes, and the width study of the paper's big networks.

* :func:`accuracy_region` / :func:`support_share`: "the supports of the energy in the Fourier
  domain of the first few NADs are included in the high accuracy regions of Fig. 1" (Sec. 3.1),
  measured as the share of a NAD's Fourier energy that falls where the Fig. 1 map is high;
* :func:`comb_share`: "the NADs of a ResNet-18 look like combs of spikes in the Fourier
  domain", measured as the share of a NAD's energy in a comb of isolated spikes;
* :func:`peak_share` / :func:`spectral_sparsity`: "not all NADs are sparse in the spectral
  domain", measured as the share of a NAD's energy in its strongest Fourier component;
* :func:`frequency_ordering`: "the NADs do not follow a uniform ordering from low to high
  frequencies (cf. DenseNet-121)", measured as the rank correlation of a NAD's index with the
  frequency of its strongest component;
* :func:`width_overlaps`: the top-k subspace overlap of NADs estimated at a reduced width with
  those of the full network, beside two full-width estimates' overlap (the noise floor).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from nadcore.book.evidence import correlation_interval, exact_value, jackknife_interval
from nadcore.book.nad_jobs import cached_nads
from nadcore.chapters.campaigns import CPU as CPU_CAMPAIGN
from nadcore.chapters.campaigns import NAMES
from nadcore.data.directions import fourier_energy, fourier_grid
from nadcore.nads.covariance import GROUPS, OVERLAP_KS, identifiable_overlap, jackknife_statistic, overlap_interval
from nadcore.nads.published import load_published_nads, published_fig1_map
from nadcore.nads.sampling import Sampler
from nadcore.nets import width_name, width_spec
from nadcore.runtime import resolve_device

__all__ = [
    "accuracy_region",
    "support_share",
    "comb_share",
    "width_overlaps",
    "region_threshold",
    "support_row",
    "support_table",
    "support_evidence",
    "comb_evidence",
    "peak_share",
    "peak_frequency",
    "spectral_sparsity",
    "frequency_ordering",
    "sparsity_table",
    "sparsity_evidence",
    "ordering_evidence",
    "width_study",
    "width_evidence",
    "published_fig1_map",
    "campaign_width",
    "network_gradients",
    "dipole_volumes",
    "volume_evidence",
]


def campaign_width(arch: str) -> int | None:
    """The width the cpu campaign trains ``arch`` at."""
    return CPU_CAMPAIGN["widths"].get(arch)


def region_threshold(acc_map) -> float:
    """The level that separates a network's high-accuracy region of Fig. 1 from the rest:
    halfway between chance (0.5) and its best cell."""
    return 0.5 + (float(np.nanmax(acc_map)) - 0.5) / 2


def accuracy_region(acc_map, size: int = 32) -> np.ndarray:
    """A Fig. 1 map on the even frequencies ``(g, g)`` (rows k1, columns k2 = -size/2, ...,
    size/2 - 2 in steps of 2) spread over every frequency of a ``size`` x ``size`` spectrum, in
    :func:`nadcore.data.directions.fourier_energy`'s layout (index i is frequency i - size/2): an
    odd frequency takes the mean of the even cells next to it (the map's region between them)."""
    m = np.asarray(acc_map, dtype=np.float64)
    h = size // 2

    def near(k):
        return [k] if k % 2 == 0 else [k - 1, (k + 1 + h) % size - h]

    ks = range(-h, h)
    return np.array(
        [[np.mean([m[(a + h) // 2, (b + h) // 2] for a in near(k1) for b in near(k2)]) for k2 in ks] for k1 in ks]
    )


def support_share(nads, acc_map, first: int = 3) -> np.ndarray:
    """Per NAD of the first ``first``: the share of its Fourier energy at frequencies where the
    Fig. 1 map ``acc_map`` (16 x 16, the even frequencies) is above :func:`region_threshold`."""
    region = accuracy_region(acc_map) >= region_threshold(acc_map)
    out = []
    for u in np.asarray(nads)[:first]:
        e = fourier_energy(np.asarray(u).reshape(32, 32))
        out.append(float(e[region].sum() / e.sum()))
    return np.array(out)


def comb_share(nad, level: float = 0.01, teeth: int = 8) -> float:
    """The share of a NAD's Fourier energy in a comb of isolated spikes: frequencies whose
    energy is at least ``level`` of the largest and none of whose four neighbours (wrapping
    around) is, counted only when there are at least ``teeth`` of them (one or two spikes are
    a single frequency, not a comb). A comb gives about 1; a smooth blob of low frequencies, or
    a single Fourier component, 0."""
    e = fourier_energy(np.asarray(nad).reshape(32, 32))
    big = e >= level * e.max()
    nb = np.zeros_like(big)
    for axis in (0, 1):
        for step in (1, -1):
            nb |= np.roll(big, step, axis=axis)
    spikes = big & ~nb
    return float(e[spikes].sum() / e.sum()) if spikes.sum() >= teeth else 0.0


# --------------------------------------------------------------------------------------------
# Sparse NADs and their ordering in frequency
# --------------------------------------------------------------------------------------------
#: NADs ranked by the ordering statistic (one of the overlap sizes that an estimate's split
#: halves are compared at), and the split-half overlap of those NADs that an estimate must reach
#: for their ranking to mean anything: an unconverged estimate's NADs are partly noise, whose
#: strongest frequency is random, so they show no ordering whatever the network
ORDERED_NADS = 64
CONVERGED = 0.7


def _peak(nad) -> tuple[np.ndarray, int, int]:
    e = fourier_energy(np.asarray(nad).reshape(32, 32))
    i, j = np.unravel_index(int(np.argmax(e)), e.shape)
    return e, int(i), int(j)


def peak_share(nad) -> float:
    """The share of a NAD's Fourier energy in its strongest real Fourier component: the
    strongest frequency k and its mirror -k (in :func:`fourier_energy`'s layout, index i is
    frequency i - 16, so -k sits at (32 - i) mod 32). 1 for a single component; about 2/1024 for
    white noise."""
    e, i, j = _peak(nad)
    mi, mj = (32 - i) % 32, (32 - j) % 32
    pair = e[i, j] + (e[mi, mj] if (mi, mj) != (i, j) else 0.0)
    return float(pair / e.sum())


def peak_frequency(nad) -> float:
    """|k| of a NAD's strongest Fourier frequency k = (k1, k2) (0 for the constant image, 16 *
    sqrt(2) for the highest)."""
    _, i, j = _peak(nad)
    return float(math.hypot(i - 16, j - 16))


def spectral_sparsity(nads, first: int = 3) -> float:
    """The mean :func:`peak_share` of the first ``first`` NADs (rows of ``nads``)."""
    return float(np.mean([peak_share(u) for u in np.asarray(nads)[:first]]))


def frequency_ordering(nads, k: int = ORDERED_NADS) -> float:
    """Spearman's correlation, over the first ``k`` NADs, of a NAD's index with
    :func:`peak_frequency`: near 1 when the NADs go from low to high frequencies in order."""
    return float(spearmanr(np.arange(k), [peak_frequency(u) for u in np.asarray(nads)[:k]]).statistic)


def _split_half(result, k: int) -> float | None:
    """The split-half top-``k`` overlap of an estimate's NADs (None for given NADs, such as the
    published ones, which were not estimated here)."""
    split = result.extras.get("split_half")
    return float(split[OVERLAP_KS.index(k)]) if split is not None else None


def sparsity_table(results: dict, first: int = 3, k: int = ORDERED_NADS) -> pd.DataFrame:
    """Per NAD estimate (``results``: label -> NADResult): the :func:`peak_share` of each of its
    first NADs, their mean (:func:`spectral_sparsity`), the :func:`frequency_ordering` of its
    first ``k`` NADs and the split-half top-``k`` overlap of the estimate (1 for the published
    NADs, which are given, not estimated here)."""
    rows = {}
    for label, r in results.items():
        split = _split_half(r, k)
        rows[label] = {
            **{f"peak NAD {i}": peak_share(r.nads[i]) for i in range(first)},
            "sparsity": spectral_sparsity(r.nads, first),
            f"ordering (first {k})": frequency_ordering(r.nads, k),
            f"split-half k={k}": split if split is not None else 1.0,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def sparsity_evidence(results: dict, first: int = 3) -> dict:
    """The keywords of ``fig5-not-all-sparse``: the least sparse of the networks' NAD estimates
    (``results``: arch -> NADResult), its :func:`spectral_sparsity` with a jackknife interval."""
    arch = min(results, key=lambda a: spectral_sparsity(results[a].nads, first))
    r = results[arch]
    iv = jackknife_interval(
        *jackknife_statistic(r, lambda V: spectral_sparsity(V, first), first, bounds=(0, 1)), GROUPS, bounds=(0, 1)
    )
    return dict(interval=iv, network=arch, networks=r.meta["networks"], trained=False)


def ordering_evidence(result, arch: str, method: str, k: int = ORDERED_NADS) -> dict:
    """The keywords of ``fig5-ordering-<arch>``: :func:`frequency_ordering` of ``result``'s first
    ``k`` NADs with its Fisher-z interval over the ``k`` NADs, on the precondition that the
    estimate has converged (split-half top-``k`` overlap at least :data:`CONVERGED`; the
    published NADs are given, not estimated: no precondition)."""
    split = _split_half(result, k)
    pre = (
        {
            f"the {method} NADs of {arch} have converged (split-half top-{k} overlap {split:.2f} >= {CONVERGED})": split
            >= CONVERGED
        }
        if split is not None
        else None
    )
    return dict(
        interval=correlation_interval(frequency_ordering(result.nads, k), k, spearman=True, what="NADs"),
        network=arch,
        method=method,
        networks=result.meta["networks"],
        preconditions=pre,
        trained=False,
    )


def width_overlaps(estimates: dict, full, full_again, published=None, ks=OVERLAP_KS) -> pd.DataFrame:
    """Top-k overlaps of NAD estimates at reduced widths (``estimates``: width -> NADResult)
    with the full network's estimate ``full``, beside the overlap of a second, independent
    full-width estimate ``full_again`` with ``full`` (the noise floor: two estimates of the same
    NADs from as many networks) and with the authors' published NADs. Rows: the widths and
    "full (second estimate)"; columns ``k=...`` and ``k=... published`` (NaN where k exceeds the
    networks behind an estimate: its NADs past that rank are arbitrary)."""
    rows = {}
    for w, r in list(estimates.items()) + [("full (second estimate)", full_again)]:
        row = {f"k={k}": identifiable_overlap(r, full, k) for k in ks}
        if published is not None:
            row |= {f"k={k} published": identifiable_overlap(r, published, k) for k in ks}
        rows[w] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def width_gap_interval(estimate, full, floor: float, k: int = 16):
    """Overlap of ``estimate`` with ``full`` at ``k`` minus the noise floor, with the jackknife
    interval of the overlap over ``estimate``'s Monte Carlo groups."""
    v, lo, hi = overlap_interval(estimate, full.nads, k)
    return v - floor, lo - floor, hi - floor


# --------------------------------------------------------------------------------------------
# The chapter's tables and the evidence of its claims
# --------------------------------------------------------------------------------------------
def support_row(result, arch: str, first: int = 3) -> dict:
    """One network's row of :func:`support_table`: the share of each of its first NADs' energy
    in the high-accuracy region of the published Fig. 1 map of ``arch``, the region's share of
    the spectrum, its level, and the share of the energy in spikes."""
    m = published_fig1_map(arch, fourier_grid(32, 16)).reshape(16, 16)
    shares = support_share(result.nads, m, first)
    region = accuracy_region(m) >= region_threshold(m)
    return {
        **{f"NAD {i}": float(v) for i, v in enumerate(shares)},
        "region of spectrum": float(region.mean()),
        "level": region_threshold(m),
        **{f"comb NAD {i}": comb_share(result.nads[i]) for i in range(first)},
    }


def support_table(results: dict) -> pd.DataFrame:
    """:func:`support_row` of each network's NADs (``results``: arch -> NADResult)."""
    return pd.DataFrame.from_dict({a: support_row(r, a) for a, r in results.items()}, orient="index")


def support_evidence(table: pd.DataFrame, row: str, method: str | None = None, network: str | None = None) -> dict:
    """The keywords of a ``fig5-support-*`` claim: the smallest share over the first NADs of the
    table's ``row`` (``network``: the network whose map it is read against, if not ``row``)."""
    r = table.loc[row]
    shares = [r[c] for c in table.columns if c.startswith("NAD ")]
    return dict(
        interval=exact_value(
            float(min(shares)),
            "exact: the published NADs and map, no sampling"
            if method is None
            else f"{method} NADs against the published map",
        ),
        network=network or row,
        threshold=round(float(r["level"]), 3),
        region=f"{r['region of spectrum']:.0%}",
        method=method or "published",
        trained=False,
    )


def comb_evidence(result, first: int = 3) -> dict:
    """The keywords of ``fig5-resnet-comb``: the smallest spike share over the first NADs."""
    return dict(
        interval=exact_value(
            min(comb_share(result.nads[i]) for i in range(first)), "exact: the published NADs, no sampling"
        ),
        trained=False,
    )


def width_study(ch, widths: dict, networks: dict) -> dict:
    """Per big network: gradient NADs at each reduced width of ``widths`` (from ``networks[arch]``
    networks, the chapter's seed) and a second full-width estimate (the next seed), compared with
    the full network's estimate and the published NADs (:func:`width_overlaps`). The table's
    ``attrs`` hold the estimates, for the claims."""
    out = {}
    for arch, ws in widths.items():
        n = int(networks[arch])
        full, _ = ch.nads(arch, "gradient", networks=n)
        again = cached_nads(arch, "gradient", n, ch.seed + 1, cache=ch.cache, device=ch.device)
        est = {int(w): ch.nads(width_spec(arch, w), "gradient", networks=n)[0] for w in ws}
        table = width_overlaps(est, full, again, load_published_nads(arch))
        table.index = [f"{width_name(arch)} {w}" if isinstance(w, int) else w for w in table.index]
        table.attrs.update(networks=n, estimates=est, full=full, again=again)
        out[arch] = table
    return out


def width_evidence(ch, arch: str, table: pd.DataFrame, k: int = 16) -> dict:
    """The keywords of ``width-nads-<arch>`` at the campaign's width: overlap with the full
    network minus the noise floor, with a jackknife interval, and whether the floor is far
    enough above chance for the comparison to say anything."""
    a = table.attrs
    width = next((w for w in sorted(a["estimates"]) if w == campaign_width(arch)), min(a["estimates"]))
    floor = identifiable_overlap(a["again"], a["full"], k)
    v, lo, hi = width_gap_interval(a["estimates"][width], a["full"], floor, k)
    name = f"{NAMES.get(arch, arch)} at {width_name(arch)} {width}"
    return dict(
        interval=jackknife_interval(v, lo, hi, GROUPS, (-1.0, 1.0)),
        network=name,
        k=k,
        floor=round(floor, 3),
        networks=a["networks"],
        preconditions={
            f"the two full-width estimates agree well above chance (floor >= {4 * k / 1024:.3f}, 4 k/D)": floor
            >= 4 * k / 1024
        },
        settings={"width": width, "networks": a["networks"], "method": "gradient"},
    )


def network_gradients(model, input_shape, seed: int, indices, device="cpu") -> np.ndarray:
    """The exact input gradients (len(indices), D) of the random networks ``indices`` of ``seed``
    (the initialisations of :func:`nadcore.nads.compute_nads`) at its evaluation point."""
    sampler = Sampler(model, tuple(input_shape), seed, "gradient", 1.0, resolve_device(device), "auto", 1, "float32")
    return sampler.rows(np.asarray(indices, dtype=np.int64))[0]


def dipole_volumes(result, gradients: np.ndarray) -> pd.DataFrame:
    """Eq. (6) along the NADs of ``result`` (an exact-gradient estimate), on the input gradients
    ``gradients`` (networks, D) of random networks that did not enter it, at the same evaluation
    point. Per NAD ``u_i``: its eigenvalue ``lambda_i``; the share of the networks whose dipole
    score ``q(u_i) = (u_i^T grad f)^2`` reaches ``eta``, the mean eigenvalue (the score an
    architecture of the same gradient energy without a preferred direction gives every
    direction, on average); Markov's bound on that share, ``min(1, lambda_i / eta)``; and the
    mean score of the networks along ``u_i`` (what ``lambda_i`` estimates)."""
    lam = np.asarray(result.eigenvalues, dtype=np.float64)
    eta = float(lam.mean())
    q = (np.asarray(gradients, dtype=np.float64) @ np.asarray(result.nads, dtype=np.float64).T) ** 2
    return pd.DataFrame(
        {
            "eigenvalue": lam,
            "share reaching eta": (q >= eta).mean(0),
            "Markov bound": np.minimum(1.0, lam / eta),
            "mean score": q.mean(0),
        },
        index=pd.RangeIndex(len(lam), name="NAD"),
    ).assign(eta=eta)


def volume_evidence(volumes: pd.DataFrame, networks: int) -> dict:
    """The keywords of ``eq6-volume-falls``: Spearman's rank correlation of the NADs'
    eigenvalues with the share of fresh networks reaching the dipole score ``eta``
    (:func:`dipole_volumes`), with its Fisher-z interval over the NADs that an estimate from
    ``networks`` networks identifies (at most one per network: the rest complete the basis)."""
    known = volumes.iloc[: min(len(volumes), int(networks))]
    rho = float(spearmanr(known["eigenvalue"], known["share reaching eta"])[0])
    return dict(
        interval=correlation_interval(rho, len(known), spearman=True, what="NADs"),
        networks=networks,
        trained=False,
        eta=f"{float(volumes['eta'].iloc[0]):.3g}",
    )
