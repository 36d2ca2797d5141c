"""One setup for every chapter: parameters in; settings, device, cache, seeds, scorecard out.

    ch = setup("03_linear_separability", profile=profile, seed=seed, device=device,
               knobs=knobs, model=model)
    ch.cfg["fig1_every"]            # the resolved settings (profile + knobs)
    ch.seeds                        # [seed, seed + 1, ...]: one per independent repetition
    ch.claim(...)                   # a scorecard claim, its verdict computed and shown
    ch.figure_data("fig1", frame)   # the numbers behind a figure, as CSV, linked under it
    ch.finish()                     # writes the chapter's claims and prints the provenance block

Outputs go to ``$NADBOOK_OUTPUT`` (the book build sets it to ``book/executed``; default
``nadbook-output/`` in the working directory): ``claims/<chapter>.json`` and
``data/<chapter>/<figure>.csv``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import textwrap
import time
from pathlib import Path

import numpy as np
import torch

import nadcore
from nadcore import kernels
from nadcore.book import bundles, evidence, profiles, reference_build
from nadcore.book import claims as claim_specs
from nadcore.book.cache import Cache
from nadcore.book.nad_jobs import cached_nads
from nadcore.book.runner import make_executor
from nadcore.nads import METHODS
from nadcore.nads.published import FIG6_COLUMNS, PUBLISHED_NETWORKS, load_published_nads
from nadcore.nets import spec_width
from nadcore.runtime import resolve_device

__all__ = ["Chapter", "setup", "output_root"]


def output_root() -> Path:
    return Path(os.environ.get("NADBOOK_OUTPUT") or "nadbook-output")


def _show_markdown(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:
        pass
    print(text)


def _parse_knobs(knobs) -> dict:
    if knobs is None:
        return {}
    if isinstance(knobs, str):  # papermill -p knobs '{"fig1_every": 2}' passes a string
        try:
            knobs = json.loads(knobs)
        except json.JSONDecodeError as e:
            raise ValueError(f"knobs must be a JSON object such as '{{\"epochs\": 5}}': {e}") from e
    if not isinstance(knobs, dict):
        raise ValueError(f"knobs must be a dict of setting -> value, got {type(knobs).__name__}")
    return knobs


def _diff(name: str, ours, paper) -> list[str]:
    """The settings of ``ours`` that differ from ``paper``, one phrase each (nested dicts by
    their dotted keys)."""
    if isinstance(ours, dict) and isinstance(paper, dict):
        return [d for k in dict.fromkeys([*paper, *ours]) for d in _diff(f"{name}.{k}", ours.get(k), paper.get(k))]
    if ours == paper:
        return []
    return [
        f"{name} {evidence.number(ours) if isinstance(ours, (int, float)) else ours} "
        f"(paper {evidence.number(paper) if isinstance(paper, (int, float)) else paper})"
    ]


def paper_settings_reduced(cfg: dict, paper_cfg: dict, keys, network: str, settings: dict) -> list[str]:
    """What of a claim's settings is not the paper's: each of the chapter settings ``keys`` (dotted
    for a nested one: ``"train.lenet"``) whose value here differs from the paper profile's, and the row's ``width`` where it is not
    ``network``'s full width (or where the claim names no network to compare it with)."""

    def get(d, key):
        for part in key.split("."):
            d = d.get(part) if isinstance(d, dict) else None
        return d

    out = [d for k in keys for d in _diff(k, get(cfg, k), get(paper_cfg, k))]
    width = settings.get("width")
    if width is not None:
        full = spec_width(network) if network else None
        if full is None or int(width) != int(full):
            out.append(f"width {int(width)}" + (f" (paper {int(full)})" if full else ""))
    return out


def bundle_hours_per_unit(bundle, claim_id: str, network: str, settings: dict, unit: str) -> float | None:
    """Hours of one more seed (``unit`` "seeds": as many runs as the bundle's seeds of the claim's
    figure and network have on average) or one more cell, index or group (the claim's fewest
    seeds per cell) of a campaign claim, from the median seconds per run in the bundle's ledger
    for the claim's figure, network (its settings' ``model`` where that differs from the
    network the claim is about: Fig. 3's, without its pooling) and width in
    ``bundle`` (:class:`nadcore.book.bundles.Bundle`), on the machines that ran them; None where
    the ledger has no such run."""
    m = re.match(r"(us-)?fig\d+", claim_id)
    if bundle is None or not m or not network:
        return None
    width, model = settings.get("width"), settings.get("model") or network
    jobs = [
        j
        for j in bundle.provenance.get("jobs", {}).values()
        if j.get("figure") == m.group(0)
        and str(j.get("model", "")).split("?")[0] == model
        and (width is None or j.get("width") == width)
        and j.get("seconds")
    ]
    if not jobs:
        return None
    per_run = [float(j["seconds"]) / max(int(j.get("runs", 1)), 1) for j in jobs]
    if unit == "seeds":
        seeds = {int(x) for j in jobs for x in j.get("seeds", [])}
        runs = sum(int(j.get("runs", 1)) for j in jobs) / max(len(seeds), 1)
    else:  # a cell or index more: the claim's fewest seeds per cell ("1-3 per cell": a new cell gets 1,
        # as most of a map's cells have; the interval is over the cells, each at its seed mean)
        runs = min([int(x) for x in re.findall(r"\d+", str(settings.get("seeds") or 1))] or [1])
    return float(np.median(per_run)) * runs / 3600


class Chapter:
    """A chapter's run: see the module docstring. Build it with :func:`setup`."""

    def __init__(self, name: str, profile: str, seed: int, device, knobs, params: dict):
        self.name, self.profile, self.seed = name, profile, int(seed)
        self.knobs = _parse_knobs(knobs)
        self.cfg = profiles.resolve(name, profile, self.knobs)
        self.paper_cfg = profiles.resolve(name, "paper")
        self.asked_device = device
        self.device = resolve_device(device)
        self.params = dict(params)
        self.cache = Cache()
        self.out = output_root()
        self.claims: list[evidence.Claim] = []
        self.started = time.perf_counter()
        self._executor = None
        self._run = None

    # ------------------------------------------------------------------ settings and seeds
    @property
    def seeds(self) -> list[int]:
        """One seed per independent repetition (``seeds`` setting): seed, seed + 1, ..."""
        return self.seeds_of("seeds")

    def seeds_of(self, setting: str) -> list[int]:
        """The seeds a count setting asks for (``seeds``, ``flip_seeds``, ...): seed, seed + 1, ...
        as many as the setting says (one where the profile has no such setting)."""
        return [self.seed + k for k in range(int(self.cfg.get(setting, 1)))]

    @property
    def run(self) -> str:
        """The key of this run, the same on every machine (:func:`reference_build.run_key`)."""
        if self._run is None:
            self._run = reference_build.run_key(self.name, self.profile, self.seed, self.cfg, self.params)
        return self._run

    def settings_of(self, chapter: str) -> dict:
        """Another chapter's settings on this run's profile (without this run's knobs): where
        a chapter reuses another's results, e.g. chapter 2's NAD estimates."""
        return profiles.resolve(chapter, self.profile)

    def executor(self):
        """A process pool of ``workers`` one-thread processes on the CPU (None: in-process)."""
        if self._executor is None and self.device.type == "cpu":
            self._executor = make_executor(self.cfg.get("workers", 1))
        return self._executor

    # ------------------------------------------------------------------ NADs
    def nads(self, arch: str, source: str = "auto", networks: int | None = None, points: int = 1, progress=False):
        """The NADs this book uses for ``arch`` (one-channel copy, one output), and a sentence
        saying where they come from. The one rule, for every chapter:

        * ``"secant"``: the authors' estimator (step 100) with chapter 2's number of networks (and
          ``secant_precision``) on this profile and this chapter's seed, so chapter 2's cache entry is reused (a model that
          chapter 2's settings do not name - the reader's own - gets LeNet's count, as there);
          ``networks`` overrides the count;
        * ``"gradient"``: exact-gradient NADs, likewise, averaged over ``points`` evaluation
          points (chapter 2 computes 1 and ``gradient_points``);
        * ``"published"``: the authors' published NADs (10,000 networks);
        * ``"auto"``: secant NADs if chapter 2 computes them for ``arch`` or ``arch`` is not one of
          the published architectures, else the published ones.
        """
        ch2 = profiles.resolve("02_nads", self.profile)
        key = arch.strip().lower()
        if source == "auto":
            published_archs = set(FIG6_COLUMNS) | {"logreg"}
            source = "published" if key in published_archs and not ch2["secant_networks"].get(key) else "secant"
        if source == "published":
            r = load_published_nads(key)
            return r, f"the authors' published NADs of {arch} ({PUBLISHED_NETWORKS:,} networks, secant)"
        if source not in METHODS:
            raise ValueError(f"source must be auto, secant, gradient or published; got {source!r}")
        counts = ch2[f"{source}_networks"]
        n = int(networks or counts.get(key) or counts["lenet"])
        r = cached_nads(
            arch,
            source,
            n,
            self.seed,
            device=self.device,
            cache=self.cache,
            progress=progress,
            points=points,
            precision=self.nad_precision(arch, source),
        )
        at = f", {points} evaluation points" if points > 1 else ""
        return r, f"{source} NADs of a 1-channel {arch}, {n:,} networks{at}, seed {self.seed}"

    def nad_precision(self, arch: str, method: str) -> str:
        """The arithmetic of ``arch``'s ``method`` NADs: chapter 2's ``secant_precision`` for the
        secant (its knobs included when this is chapter 2), float32 for the gradient."""
        ch2 = self.cfg if self.name == "02_nads" else profiles.resolve("02_nads", self.profile)
        return ch2["secant_precision"].get(arch.strip().lower(), "float32") if method == "secant" else "float32"

    # ------------------------------------------------------------------ evidence
    def claim(
        self,
        id: str,
        paper: str | None = None,
        criterion: evidence.Criterion | None = None,
        *,
        values=None,
        interval: evidence.Interval | None = None,
        steps: int | None = None,
        paper_steps: int | None = None,
        networks: int | None = None,
        paper_networks: int = PUBLISHED_NETWORKS,
        preconditions: dict | None = None,
        settings: dict | None = None,
        show: bool = True,
        trained: bool = True,
        paper_value: float | None = None,
        profile: str | None = None,
        hours_per_unit: float | None = None,
        settle_floor: tuple | None = None,
        samples: tuple[int, int, str] | None = None,
        **fill,
    ) -> None:
        """Record the scorecard claim ``id`` registered in :mod:`nadcore.book.claims` (its
        statement, kind, criterion and the paper's number come from there; ``fill`` gives the
        values its ``{placeholders}`` name, beside the chapter's settings and parameters).
        ``values``: the quantity once per seed (a t-interval is taken, kept in the quantity's
        range), or ``interval``; ``steps``/``paper_steps``: SGD steps of one run here and in the
        paper (their ratio is the claim's ``budget_fraction``); ``networks``: random networks
        behind a NAD estimate (over ``paper_networks``: its ``mc_fraction``). Shows the verdict
        under a label the scorecard page links to; returns nothing, so a cell that ends with a
        claim prints only its verdict. (``paper`` and ``criterion`` given here instead of
        registered: an unregistered claim of kind "paper".) ``profile``: what the numbers were
        made on, when not this run: ``"campaign cpu"`` for a committed campaign bundle
        (:mod:`nadcore.book.bundles`). ``hours_per_unit``: CPU hours of one more seed (or cell,
        or group) of the claim, for its ``to_settle`` (a bundle's claims take it from the
        bundle's ledger); ``settle_floor``: the part of the interval that more of them cannot
        shrink (:func:`nadcore.book.evidence.runs_to_decide`); ``samples``: ``(training samples here,
        in the paper, why fewer)``, a reduced setting of the row where fewer
        (:func:`nadcore.data.cifar_budget.training_images`)."""
        profile = profile or self.profile
        values_for_text = {**self.cfg, **self.params, "profile": profile, **fill}
        if paper is None:
            s = claim_specs.spec(self.name, id)
            statement = evidence.fill_placeholders(s.statement, values_for_text)
            crit = s.criterion(values_for_text)
            kind, source, bounds, trained = s.kind, s.source, s.bounds, s.trained
            paper_value = s.resolved_paper_value(values_for_text)
            pv_source = evidence.fill_placeholders(s.paper_value_source, values_for_text)
            if s.fitted:  # a calibration: what was fitted to what, shown on the scorecard
                settings = {"fitted": evidence.fill_placeholders(s.fitted, values_for_text), **(settings or {})}
            network, keys, revised = s.network, s.paper_settings, s.revised
            reading = evidence.fill_placeholders(s.tolerance, values_for_text)
        else:
            statement, crit, kind, source, bounds, pv_source = paper, criterion, "paper", "", evidence.UNBOUNDED, ""
            network, keys, revised, reading = "", (), "", ""
        iv = interval if interval is not None else evidence.t_interval(values, bounds=bounds)
        budget = steps / paper_steps if (trained and steps and paper_steps) else None
        reduced = paper_settings_reduced(self.cfg, self.paper_cfg, keys, network, settings or {})
        if samples is not None and int(samples[0]) < int(samples[1]):
            n, p, why = samples
            reduced.append(f"{int(n):,} training samples (paper {int(p):,})" + (f": {why}" if why else ""))
        where = "the CPU that ran this build's jobs"
        if hours_per_unit is None and (settings or {}).get("bundle") and profile.startswith("campaign "):
            campaign = profile.split(" ", 1)[1]
            bundle = bundles.load(campaign)
            hours_per_unit = bundle_hours_per_unit(bundle, id, network, settings or {}, iv.unit)
            where = f"the machines of campaign {campaign!r} ({', '.join(bundle.machines())})" if bundle else where
        c = evidence.Claim.evaluate(
            id,
            self.name,
            statement,
            crit,
            iv,
            trained=trained,
            budget_fraction=budget,
            paper_value=paper_value,
            preconditions=preconditions,
            settings={"profile": profile, **(settings or {})},
            kernel_path=kernels.path(),
            kind=kind,
            source=source,
            paper_value_source=pv_source,
            profile=profile,
            bounds=bounds,
            mc_fraction=None if networks is None else networks / paper_networks,
            reduced=reduced,
            hours_per_unit=hours_per_unit,
            settle_floor=settle_floor,
            revised=revised,
            reading=reading,
            run=self.run,
            reference=reference_build.reference_claim(id, self.run),
            reference_about=reference_build.reference_about(),
        )
        if c.to_settle is not None and c.to_settle.get("hours") is not None:
            c.to_settle["on"] = where
        self.claims = [x for x in self.claims if x.id != c.id] + [c]
        if show:
            _show_markdown(f"(claim-{c.id})=\n{c.sentence()}")

    def criteria(self, ids=None, **fill) -> str:
        """The registered criteria of this chapter's claims ``ids`` (all if None), with ``fill``
        for their placeholders: each claim's id, then its criterion indented and wrapped to the
        book's 88 characters. Printed before the runs they will judge."""
        values = {**self.cfg, **self.params, "profile": self.profile, **fill}
        found = claim_specs.specs(self.name)
        return "\n".join(
            f"{i}\n"
            + textwrap.fill(
                str(found[i].criterion(values)),
                88,
                initial_indent="    ",
                subsequent_indent="    ",
                break_long_words=False,
            )
            for i in list(ids or found)
        )

    def verdict_summary(self, prefixes=None) -> str:
        """Markdown list of this run's claims so far (those whose id starts with one of
        ``prefixes``, in that order; all if None): verdict, measured interval, link to the claim.
        For a chapter's summary, so that no verdict is written by hand."""
        groups = [[c for c in self.claims if c.id.startswith(p)] for p in prefixes] if prefixes else [self.claims]
        lines = [
            f"* **{c.verdict}**: {c.paper} {c.criterion}: {c.measured()} ({{ref}}`details <claim-{c.id}>`)"
            for g in groups
            for c in g
        ]
        return "\n".join(lines) if lines else "(no claims recorded)"

    def experiments(self) -> str:
        """One line naming what this run computed or read from the cache: the number of
        distinct experiments and their digest (:meth:`nadcore.book.cache.Cache.experiments`),
        which follows the settings and the seeds, not float rounding. A chapter prints it in a
        checked cell, so that a changed seed or setting fails its smoke test."""
        n, d = self.cache.experiments()
        return f"{n} experiments (job configurations), digest {d}"

    def figure_data(self, figure: str, frame) -> None:
        """Write the tidy table behind a figure to ``data/<chapter>/<figure>.csv`` and show a
        "data" link to it (under the figure it belongs to). Returns nothing, so that a cell
        that ends with it shows the link and no path of the machine that built the book."""
        path = self.out / "data" / self.name / f"{figure}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        if "kernel_path" not in frame.columns:  # which kernels made the numbers (nadcore.kernels.path)
            frame = frame.assign(kernel_path=kernels.path())
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        frame.to_csv(tmp, index=False, float_format="%.6g")
        os.replace(tmp, path)
        _show_markdown(f"{{download}}`data <data/{self.name}/{figure}.csv>` ({len(frame):,} rows)")

    # ------------------------------------------------------------------ the end
    def finish(self, data=None, extra: dict | None = None) -> None:
        """Write the chapter's claims and print the reproducibility block."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        if self.claims:
            evidence.write_claims(self.out / "claims" / f"{self.name}.json", self.name, self.claims)
        print(self.provenance(data=data, extra=extra))

    def provenance(self, data=None, extra: dict | None = None) -> str:
        """Profile, parameters, knobs, settings, seeds, device, data, versions and wall time."""
        dev = str(self.device)
        if self.device.type == "cuda":
            dev += f", {torch.cuda.get_device_name(self.device)}"
        elif self.device.type == "cpu":
            dev += f", {torch.get_num_threads()} torch thread(s)"
        if str(self.asked_device) != str(self.device):
            dev += f" (asked: {self.asked_device})"
        rows = [
            ("profile", self.profile),
            ("parameters", ", ".join(f"{k}={v!r}" for k, v in self.params.items()) or "-"),
            ("knobs", json.dumps(self.knobs) if self.knobs else "none"),
            ("settings", json.dumps(self.cfg, default=str)),
            ("seeds", ", ".join(map(str, self.seeds))),
            ("device", dev),
            ("kernel path", kernels.path()),
        ]
        if data is not None:
            rows.append(("data", data))
        rows += [(str(k), str(v)) for k, v in (extra or {}).items()]
        if self.claims:
            counts = {v: sum(c.verdict == v for c in self.claims) for v in evidence.VERDICTS}
            rows.append(("claims", ", ".join(f"{n} {v}" for v, n in counts.items())))
        rows.append(
            (
                "versions",
                f"nadcore {nadcore.__version__}, torch {torch.__version__}, numpy "
                f"{np.__version__}, python {platform.python_version()}, "
                f"{platform.system()} {platform.machine()}",
            )
        )
        secs = time.perf_counter() - self.started
        rows.append(("wall time", f"{secs:.0f} s" if secs < 60 else f"{int(secs // 60)} min {secs % 60:.0f} s"))
        width = max(len(k) for k, _ in rows)
        return "\n".join(["Reproducibility", "---------------"] + [f"{k:<{width}}  {v}" for k, v in rows])


def setup(chapter: str, *, profile: str = "cpu", seed: int = 0, device="auto", knobs=None, **params) -> Chapter:
    """Start a chapter: resolve ``profile`` + ``knobs`` (unknown knobs raise, listing the valid
    ones), the device and the cache; ``params`` are the chapter's other parameters (model, data
    paths), recorded for the provenance block. Prints one line saying what runs."""
    ch = Chapter(chapter, profile, seed, device, knobs, params)
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    print(
        f"{chapter}: profile {profile!r}, seeds {ch.seeds}, device {ch.device}"
        + (f", {shown}" if shown else "")
        + (f", knobs {ch.knobs}" if ch.knobs else "")
    )
    return ch
