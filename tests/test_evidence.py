"""nadcore.book.evidence: intervals over seeds and verdicts computed from them."""

import math

import numpy as np
import pytest

from nadcore.book.evidence import (
    CLAIM_KEYS,
    Claim,
    ClaimSpec,
    Criterion,
    accuracy_interval,
    difference_interval,
    exact_value,
    fisher_interval,
    jackknife_interval,
    number,
    paired_gap_interval,
    read_claims,
    t_interval,
    write_claims,
)


def test_t_interval_matches_the_textbook():
    iv = t_interval([1.0, 2.0, 3.0])
    assert iv.value == 2.0 and iv.n == 3
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n)
    assert iv.low == pytest.approx(2 - half) and iv.high == pytest.approx(2 + half)
    one = t_interval([0.7])
    assert one.value == 0.7 and math.isnan(one.low)


@pytest.mark.parametrize(
    "values,op,threshold,verdict",
    [
        ([0.30, 0.32, 0.31], ">=", 0.05, "reproduced"),  # interval above the criterion
        ([0.00, 0.01, -0.01], ">=", 0.05, "not reproduced"),  # below it
        ([0.0, 0.10, 0.05], ">=", 0.05, "inconclusive"),  # straddling it
        ([0.02, 0.03, 0.025], "<=", 0.05, "reproduced"),
        ([0.2, 0.3, 0.25], "<=", 0.05, "not reproduced"),
        ([0.6], ">=", 0.5, "inconclusive"),  # one seed: no interval
    ],
)
def test_verdicts_on_synthetic_intervals(values, op, threshold, verdict):
    assert Criterion("q", op, threshold).verdict(t_interval(values))[0] == verdict


def test_failed_precondition_is_inconclusive_and_winners_need_separated_intervals():
    c = Criterion("uniformity gap", "<=", 0.05)
    iv = t_interval([0.0, 0.01, 0.0])
    assert c.verdict(iv)[0] == "reproduced"
    v, why = c.verdict(iv, {"the network learned (accuracy above chance)": False})
    assert v == "inconclusive" and "above chance" in why
    # paired difference of two predictors whose intervals overlap: no winner
    a, b = np.array([0.37, 0.1, 0.6]), np.array([0.01, 0.2, 0.3])
    assert Criterion("rho(secant) - rho(gradient)", ">", 0.0).verdict(t_interval(a - b))[0] == "inconclusive"


def test_claim_schema_roundtrip(tmp_path):
    c = Claim.evaluate(
        "x-1",
        "03_linear_separability",
        "Fig. 1: ...",
        Criterion("gap", ">=", 0.05),
        t_interval([0.2, 0.22, 0.21]),
        trained=True,
        budget_fraction=0.5,
        paper_value=0.4,
        settings={"grid": "8x8"},
    )
    d = c.to_json()
    assert list(d) == list(CLAIM_KEYS) and d["verdict"] == "reproduced" and d["seeds"] == 3
    assert d["kernel_path"] == ""  # not given: unknown
    k = Claim.evaluate(
        "x-3",
        "02_nads",
        "Fig. 6",
        Criterion("overlap", ">=", 0.5),
        exact_value(0.7),
        trained=False,
        kernel_path="native",
    )
    assert k.to_json()["kernel_path"] == "native"
    e = Claim.evaluate("x-2", "01_pooling", "Thm 1", Criterion("max |z|", "<=", 3.0), exact_value(1.2), trained=False)
    assert e.to_json()["budget_fraction"] is None and e.verdict == "reproduced"  # an exact value decides
    write_claims(tmp_path / "claims" / "a.json", "a", [c, e])
    merged = read_claims(sorted((tmp_path / "claims").glob("*.json")))
    assert [x["id"] for x in merged["claims"]] == ["x-1", "x-2"]


def test_intervals_stay_in_their_range():
    acc = t_interval([0.99, 1.0, 0.97], bounds=(0.0, 1.0))
    assert acc.high <= 1.0 and acc.low >= 0.0
    spread = t_interval([0.001, 0.03, 0.0], bounds=(0.0, math.inf))
    assert spread.low == 0.0
    rho = fisher_interval([0.95, 0.7, 0.99])
    assert -1 < rho.low < rho.value < rho.high < 1
    assert fisher_interval([0.3, 0.4]).value == pytest.approx(math.tanh(np.mean(np.arctanh([0.3, 0.4]))))
    jk = jackknife_interval(0.98, 0.9, 1.07, 8, bounds=(0, 1))
    assert jk.high == 1.0 and jk.unit == "groups" and jk.n == 8


def test_accuracy_interval_adds_the_test_sets_binomial_noise():
    seeds = [0.80, 0.80, 0.80]  # no spread over seeds at all
    iv = accuracy_interval(seeds, n_test=1000)
    half = 4.302652729911275 * math.sqrt(0.8 * 0.2 / 1000 / 3)
    assert iv.high - iv.value == pytest.approx(half)
    assert accuracy_interval(seeds, n_test=10**9).high - 0.8 < 1e-3
    d = accuracy_interval([0.1, 0.12, 0.11], n_test=500, difference=True)
    assert d.low > -1 and "binomial" in d.method


def test_claim_spec_fills_its_placeholders_and_checks_its_kind():
    s = ClaimSpec(
        "fig1-gap",
        "paper",
        "Sec. 2, Fig. 1",
        "{model} generalises on low frequencies.",
        "gap of {model} at k <= {low}",
        ">=",
        "{threshold}",
        bounds=(-1, 1),
        paper_value=0.227,
        paper_value_source="the published map",
    )
    vals = {"model": "lenet", "low": np.int64(4), "threshold": 0.1135}
    c = s.criterion(vals)
    assert str(c) == "gap of lenet at k <= 4 >= 0.114" and c.threshold == 0.1135
    assert "np.int64" not in str(c) and number(np.int64(32)) == "32"
    with pytest.raises(ValueError, match="kind"):
        ClaimSpec("x", "rumour", "s", "t", "q", ">=", 0)
    with pytest.raises(ValueError, match="source"):
        ClaimSpec("x", "paper", "", "t", "q", ">=", 0)
    with pytest.raises(KeyError, match="threshold"):
        s.criterion({"model": "lenet", "low": 4})


def test_a_one_run_gap_is_paired_with_the_published_values_at_the_same_points():
    rng = np.random.default_rng(0)
    published = np.r_[rng.uniform(0.6, 1.0, 10), rng.uniform(0.5, 0.9, 20)]  # fixed, spread-out points
    first = np.arange(30) < 10
    ours = published + rng.normal(0, 0.01, 30)  # the same map, one run each
    gap = paired_gap_interval(ours, published, first, ~first, (-1, 1), "cells")
    truth = published[first].mean() - published[~first].mean()
    assert gap.value == pytest.approx(ours[first].mean() - ours[~first].mean())
    assert gap.low < truth < gap.high and gap.high - gap.low < 0.03 and "10 + 20 cells" in gap.method
    unpaired = difference_interval(ours[first], ours[~first])  # the points' spread taken for noise
    assert unpaired.high - unpaired.low > 4 * (gap.high - gap.low)
    shifted = paired_gap_interval(ours + 0.2 * first, published, first, ~first)  # a real disagreement
    assert shifted.low > truth + 0.15
    one = paired_gap_interval(ours[:3], published[:3], [True, False, False], [False, True, True])
    assert math.isnan(one.low) and math.isnan(one.high)  # one point in a band: no interval


def test_seeds_and_groups_are_told_apart():
    c = Claim.evaluate(
        "j",
        "02_nads",
        "overlap",
        Criterion("o", ">=", 0.5),
        jackknife_interval(0.7, 0.6, 0.8, 8),
        trained=False,
        mc_fraction=0.4,
    )
    d = c.to_json()
    assert d["seeds"] == 0 and d["groups"] == 8 and d["mc_fraction"] == 0.4
    assert "8 groups" in c.sentence() and "0.4 of the paper's random networks" in c.sentence()


def test_within_criterion_is_the_papers_value_plus_minus_a_tolerance():
    from nadcore.book.evidence import Criterion, Interval

    c = Criterion("gap", "within", 0.05, center=0.22)
    assert str(c) == "gap within 0.22 +- 0.05" and c.band == pytest.approx((0.17, 0.27))
    iv = lambda lo, hi: Interval((lo + hi) / 2, lo, hi, 3, "t")  # noqa: E731
    assert c.verdict(iv(0.18, 0.26))[0] == "reproduced"
    assert c.verdict(iv(0.02, 0.10))[0] == "not reproduced"
    assert c.verdict(iv(0.15, 0.20))[0] == "inconclusive"
    with pytest.raises(ValueError, match="center"):
        Criterion("gap", "within", 0.05)


# --------------------------------------------------------------------------------------------
# Verdicts that do not depend on the CPU, and what would decide an undecided one
# --------------------------------------------------------------------------------------------
def _interval_with(mean: float, sd: float, n: int):
    """A t-interval over ``n`` values with exactly this mean and sample standard deviation."""
    z = np.linspace(-1.0, 1.0, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return t_interval(mean + sd * z)


def test_an_interval_decides_only_beyond_its_cpu_margin():
    from nadcore.book.evidence import cpu_margin

    crit = Criterion("q", ">=", 0.5)
    iv = _interval_with(0.62, 0.05, 4)  # half-width 3.18 * 0.025 = 0.080, margin one se = 0.025
    assert cpu_margin(iv) == pytest.approx(0.025)
    assert iv.low == pytest.approx(0.62 - 0.0796, abs=1e-3)
    assert crit.verdict(iv)[0] == "reproduced"  # low 0.540 clears 0.5 by more than the margin
    near = _interval_with(0.59, 0.05, 4)  # low 0.510: clears 0.5, but by less than the margin
    v, why = crit.verdict(near)
    assert near.low > 0.5 and v == "inconclusive" and "CPU margin" in why
    # ... and the same interval moved as another CPU's rounding would move it (within one se) is
    # inconclusive too, on both sides: the verdict cannot flip between reproduced and not
    for shift in (-0.02, 0.0, 0.02):
        moved = _interval_with(0.59 + shift, 0.05, 4)
        assert crit.verdict(moved)[0] in ("inconclusive", "reproduced")
    far = _interval_with(0.38, 0.05, 4)  # high 0.460: below 0.5 by more than the margin
    assert crit.verdict(far)[0] == "not reproduced"
    below = _interval_with(0.41, 0.05, 4)  # high 0.490 < 0.5, by less than the margin
    assert below.high < 0.5 and crit.verdict(below)[0] == "inconclusive"


def test_a_run_the_reference_build_ran_keeps_its_verdict_where_only_rounding_moved_it():
    from nadcore.book.evidence import ANCHOR_SPAN, Interval, cpu_margin

    crit = Criterion("q", ">=", 0.5)
    kw = dict(trained=True, budget_fraction=1.0, profile="cpu", run="k1", reference_about="a Xeon, commit abc1234")
    here = _interval_with(0.59, 0.05, 10)  # low 0.554: clears 0.5 by 2 margins of 10 redrawn runs
    m = cpu_margin(here, redrawn=True)
    assert crit.verdict(here, redrawn=True)[0] == "reproduced"
    # the reference build (another CPU) found the same run inconclusive, its interval one margin lower
    ref = {"verdict": "inconclusive", "ci_low": here.low - m, "ci_high": here.high - m, "run": "k1"}
    c = Claim.evaluate("a", "05", "x.", crit, here, reference=ref, **kw)
    assert c.verdict == "inconclusive" and "as in the reference build (a Xeon" in c.note and "reproduced" in c.note
    assert c.to_settle is not None and c.run == "k1" and c.to_json()["run"] == "k1"
    # ... and the other way round: the verdict the reference build found is the one every CPU shows
    back = Claim.evaluate(
        "a",
        "05",
        "x.",
        crit,
        _interval_with(0.59 - m, 0.05, 10),
        reference=dict(ref, verdict="reproduced", ci_low=here.low, ci_high=here.high),
        **kw,
    )
    assert back.verdict == "reproduced" and back.to_settle is None
    # an edge moved further than another CPU's rounding: not the same result, the row keeps its own
    far = dict(ref, ci_low=here.low - (ANCHOR_SPAN + 0.5) * m, ci_high=here.high - (ANCHOR_SPAN + 0.5) * m)
    own = Claim.evaluate("a", "05", "x.", crit, here, reference=far, **kw)
    assert own.verdict == "reproduced" and "more than another CPU's rounding" in own.note
    # a margin from a few seeds is itself uncertain: the larger of the two builds' margins counts
    wide = {"verdict": "inconclusive", "ci_low": 0.3, "ci_high": 0.75, "run": "k1"}  # from 10 seeds too
    m_wide = cpu_margin(Interval(here.value, 0.3, 0.75, here.n, here.method, here.unit), redrawn=True)
    assert ANCHOR_SPAN * m < here.low - 0.3 < ANCHOR_SPAN * m_wide  # beyond this run's span, within that one's
    assert Claim.evaluate("a", "05", "x.", crit, here, reference=wide, **kw).verdict == "inconclusive"
    # no reference, or the same verdict: the row is its own
    assert Claim.evaluate("a", "05", "x.", crit, here, **kw).note == crit.verdict(here, redrawn=True)[1]
    same = dict(ref, verdict="reproduced")
    assert Claim.evaluate("a", "05", "x.", crit, here, reference=same, **kw).note == crit.verdict(here, redrawn=True)[1]
    # an exact value moves by float rounding only
    ref = {"verdict": "inconclusive", "ci_low": 0.5 + 3e-5, "ci_high": 0.5 + 3e-5}  # float32 rounding
    e = Claim.evaluate("e", "01", "x.", crit, exact_value(0.5), trained=False, reference=ref)
    assert e.verdict == "inconclusive" and "float rounding" in e.note
    off = {"verdict": "inconclusive", "ci_low": 0.5 + 1e-3, "ci_high": 0.5 + 1e-3}
    assert Claim.evaluate("e", "01", "x.", crit, exact_value(0.5), trained=False, reference=off).verdict == "reproduced"


def test_a_run_key_names_code_and_parameters_not_the_machine(tmp_path):
    import json

    from nadcore.book import reference_build as rb

    key = rb.run_key("05_underspecification", "cpu", 0, {"seeds": 5, "workers": 2}, {"model": "lenet"})
    assert key == rb.run_key("05_underspecification", "cpu", 0, {"seeds": 5, "workers": 1}, {"model": "lenet"})
    others = [
        rb.run_key("05_underspecification", "cpu", 1, {"seeds": 5}, {"model": "lenet"}),
        rb.run_key("05_underspecification", "smoke", 0, {"seeds": 5}, {"model": "lenet"}),
        rb.run_key("05_underspecification", "cpu", 0, {"seeds": 6}, {"model": "lenet"}),
        rb.run_key("05_underspecification", "cpu", 0, {"seeds": 5}, {"model": "mlp"}),
        rb.run_key("04_cifar10", "cpu", 0, {"seeds": 5}, {"model": "lenet"}),
    ]
    assert key not in others and len(set(others)) == len(others)
    rec = tmp_path / "reference.json"
    row = {"kind": "paper", "verdict": "reproduced", "value": 0.6, "ci_low": 0.55, "ci_high": 0.65, "run": key}
    rec.write_text(json.dumps({"about": {"cpu": "Intel Xeon", "commit": "abc1234def"}, "claims": {"c": row}}))
    assert rb.reference_claim("c", key, rec) == row
    assert rb.reference_claim("c", others[0], rec) is None and rb.reference_claim("d", key, rec) is None
    assert rb.reference_about(rec) == "Intel Xeon, commit abc1234"
    assert rb.reference_claim("c", key, tmp_path / "absent.json") is None
    # the scorecard says how many rows the reference build ran and which keep its verdict
    from nadcore.book.scorecard import reference_section

    rows = [{"id": "c", "run": key, "note": "reproduced as in the reference build (x): ..."}, {"id": "d", "run": key}]
    stand = rb.anchoring(rows, rec)
    assert stand == {"build": "Intel Xeon, commit abc1234", "ran": 1, "of": 2, "kept": ["c"]}
    assert "it ran 1 of these 2 rows" in reference_section(stand)[0] and ": c." in reference_section(stand)[0]
    assert rb.anchoring(rows, tmp_path / "absent.json")["build"] is None
    assert "every verdict is this build's own" in reference_section(rb.anchoring(rows, tmp_path / "absent.json"))[0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"claims": {}}))
    with pytest.raises(ValueError, match="compare_builds.py --record"):
        rb.reference_claim("c", key, bad)


def test_runs_this_build_trained_clear_the_bound_by_what_another_cpu_would_move_their_edge():
    from scipy.stats import t

    from nadcore.book.evidence import cpu_margin, redraw_factor, runs_to_decide

    crit = Criterion("q", ">=", 0.5)
    iv = _interval_with(0.62, 0.05, 4)  # low 0.540: 1.6 standard errors above 0.5
    q = t.ppf(0.975, 3)
    assert redraw_factor(4) == pytest.approx(np.sqrt(2) * np.sqrt(1 + q**2 / 6))  # the edge's spread
    assert cpu_margin(iv, redrawn=True) == pytest.approx(0.025 * redraw_factor(4))
    assert crit.verdict(iv)[0] == "reproduced" and crit.verdict(iv, redrawn=True)[0] == "inconclusive"
    assert redraw_factor(3) == pytest.approx(3.36, abs=0.01) and redraw_factor(10) == pytest.approx(1.60, abs=0.01)
    # the edge of a fresh draw of 4 runs lands beyond the margin about one time in six
    rng = np.random.default_rng(0)
    draws = rng.normal(0.0, 1.0, (20000, 2, 4))
    edges = draws.mean(2) - q * draws.std(2, ddof=1) / 2
    assert np.std(edges[:, 0] - edges[:, 1]) == pytest.approx(redraw_factor(4) * 0.5, rel=0.1)
    # a claim trained in this build gets the wider margin, one read from a campaign bundle not
    kw = dict(trained=True, budget_fraction=1.0)
    built = Claim.evaluate("b", "03", "x.", crit, iv, profile="cpu", **kw)
    bundled = Claim.evaluate("c", "03", "x.", crit, iv, profile="campaign cpu", **kw)
    untrained = Claim.evaluate("d", "03", "x.", crit, iv, profile="cpu", trained=False)
    assert built.verdict == "inconclusive" and "runs of this build" in built.note
    assert bundled.verdict == untrained.verdict == "reproduced"
    # ... and what would settle it asks for the runs that clear the wider margin
    assert built.to_settle["need"] > runs_to_decide(iv, Criterion("q", ">=", 0.55))["have"]
    assert runs_to_decide(iv, crit, redrawn=True)["need"] == built.to_settle["need"]


def test_a_closed_form_at_its_bound_is_at_it_on_every_cpu():
    # 0.5 computed as 0.5000000000000013 on one CPU and 0.4999999999999989 on another
    for v in (0.5000000000000013, 0.4999999999999989, 0.5):
        assert Criterion("Bayes accuracy", "<=", 0.5).verdict(exact_value(v))[0] == "reproduced"
        assert Criterion("Bayes accuracy", ">", 0.5).verdict(exact_value(v))[0] == "not reproduced"
        assert Criterion("acc", "within", 0.1, center=0.4).verdict(exact_value(v))[0] == "reproduced"
    assert Criterion("Bayes accuracy", "<=", 0.5).verdict(exact_value(0.5001))[0] == "not reproduced"


@pytest.mark.parametrize(
    "mean,sd,n,op,threshold", [(0.58, 0.05, 3, ">=", 0.5), (0.45, 0.08, 4, "<=", 0.5), (0.03, 0.04, 5, ">", 0.0)]
)
def test_runs_to_decide_gives_the_runs_that_decide_at_the_measured_spread(mean, sd, n, op, threshold):
    from nadcore.book.evidence import runs_to_decide

    crit = Criterion("q", op, threshold)
    iv = _interval_with(mean, sd, n)
    assert crit.verdict(iv)[0] == "inconclusive"
    settle = runs_to_decide(iv, crit, hours_per_unit=0.5)
    need = settle["need"]
    assert settle["unit"] == "seeds" and settle["have"] == n and need > n
    assert settle["more"] == need - n and settle["hours"] == pytest.approx(0.5 * (need - n))
    # with that many values of the same mean and spread the verdict is decided; with one fewer not
    assert crit.verdict(_interval_with(mean, sd, need))[0] == "reproduced"
    if need - 1 > n:
        assert crit.verdict(_interval_with(mean, sd, need - 1))[0] == "inconclusive"


def test_a_seed_is_priced_from_what_its_jobs_measured_when_they_ran():
    from nadcore.book.evidence import runs_to_decide
    from nadcore.book.settling import hours_per_run

    assert hours_per_run([1800.0, 5400.0, np.nan], 2) == pytest.approx(1.0)  # a job not measured adds 0
    assert hours_per_run(7200.0, 4) == pytest.approx(0.5)
    assert hours_per_run([np.nan], 3) is None and hours_per_run(3600.0, 0) is None  # nothing to go by
    # a few seconds a seed stays a cost, not 0 hours: three significant digits
    settle = runs_to_decide(
        _interval_with(0.58, 0.05, 3), Criterion("q", ">=", 0.5), hours_per_unit=hours_per_run(9, 1)
    )
    assert 0 < settle["hours"] == pytest.approx(settle["more"] * 9 / 3600, rel=1e-2)


def test_runs_to_decide_says_when_more_runs_cannot_decide():
    from nadcore.book.evidence import runs_to_decide

    crit = Criterion("q", ">=", 0.5)
    on = runs_to_decide(_interval_with(0.5, 0.05, 3), crit)
    assert on["need"] is None and "on the bound" in on["why"]
    pre = runs_to_decide(_interval_with(0.7, 0.05, 3), crit, {"the network fitted its training set": False})
    assert pre["need"] is None and "fitted its training set" in pre["why"]
    one = runs_to_decide(t_interval([0.6]), crit)
    assert one["need"] is None and "at least 2" in one["why"]


def test_a_row_is_at_the_papers_settings_only_when_nothing_is_reduced():
    crit, iv = Criterion("q", ">=", 0.5), _interval_with(0.8, 0.01, 3)
    full = Claim.evaluate("a", "c", "s", crit, iv, trained=True, budget_fraction=1.0, reduced=[])
    assert full.at_paper_settings and full.reduced == [] and full.to_settle is None
    short = Claim.evaluate("b", "c", "s", crit, iv, trained=True, budget_fraction=0.2, reduced=[])
    assert not short.at_paper_settings and short.reduced == ["0.2 of the paper's SGD steps"]
    unknown = Claim.evaluate("c", "c", "s", crit, iv, trained=True, reduced=[])  # steps not recorded
    assert not unknown.at_paper_settings
    narrow = Claim.evaluate("d", "c", "s", crit, iv, trained=False, reduced=["width 16 (paper 64)"], mc_fraction=0.4)
    assert not narrow.at_paper_settings
    assert narrow.reduced == ["width 16 (paper 64)", "0.4 of the paper's random networks"]
    untrained = Claim.evaluate("e", "c", "s", crit, iv, trained=False, reduced=[])
    assert untrained.at_paper_settings
    assert not Claim.evaluate("f", "c", "s", crit, iv, trained=False).at_paper_settings  # reduced not known
    undecided = Claim.evaluate(
        "g", "c", "s", crit, _interval_with(0.55, 0.05, 3), trained=False, reduced=[], hours_per_unit=2.0
    )
    assert undecided.verdict == "inconclusive" and undecided.to_settle["hours"] > 0


def test_paper_settings_reduced_names_each_setting_and_the_width():
    from nadcore.book.setup import paper_settings_reduced

    paper = {"train": {"lenet": {"n_train": 10000, "epochs": 50}}, "sigma": 3.0}
    cpu = {"train": {"lenet": {"n_train": 4000, "epochs": 50}}, "sigma": 3.0}
    assert paper_settings_reduced(cpu, paper, ("train.lenet", "sigma"), "", {}) == [
        "train.lenet.n_train 4000 (paper 10000)"
    ]
    assert paper_settings_reduced(paper, paper, ("train.lenet",), "", {}) == []
    assert paper_settings_reduced(paper, paper, (), "resnet18", {"width": 16}) == ["width 16 (paper 64)"]
    assert paper_settings_reduced(paper, paper, (), "resnet18", {"width": 64}) == []
    assert paper_settings_reduced(paper, paper, (), "densenet121", {"width": 8}) == ["width 8 (paper 32)"]
    assert paper_settings_reduced(paper, paper, (), "", {"width": 8}) == ["width 8"]  # no network: not the paper's


def test_a_claims_network_is_the_width_bearing_network_its_id_names():
    from nadcore.book.claims import specs

    found = specs("03_linear_separability")
    assert found["fig1-train-fit-densenet121"].network == "densenet121"
    assert found["fig1-matches-published-resnet18-full-width"].network == "resnet18"
    assert found["fig1-frequency-gap"].network == ""


def test_runs_to_decide_never_asks_for_more_cells_than_the_grid_has():
    from nadcore.book.evidence import Interval, runs_to_decide

    iv = Interval(0.93, 0.80, 1.06, 30, "t-interval over 30 cells", "groups")  # wide: ~800 cells to decide
    settle = runs_to_decide(iv, Criterion("q", ">=", 0.9))
    assert settle["unit"] == "cells" and settle["need"] is None and "all there are" in settle["why"]


def test_runs_to_decide_knows_a_side_of_a_gap_that_cannot_grow():
    """Fig. 6's gap between the first NADs (ten at most) and those past 700: past ten first NADs
    their spread stays in the interval however many indices past 700 come, and to_settle says so
    instead of asking for indices that cannot help."""
    from nadcore.book.evidence import difference_interval, fixed_group_floor, runs_to_decide

    def exactly(rng, n, mean, sd):
        z = rng.standard_normal(n)
        return mean + sd * (z - z.mean()) / z.std(ddof=1)

    rng = np.random.default_rng(0)
    first = exactly(rng, 10, 0.10, 0.05)
    crit = Criterion("gap", ">=", 0.15)
    iv = difference_interval(first, exactly(rng, 9, 0.0, 0.006), what="NAD indices")
    assert crit.verdict(iv)[0] == "inconclusive"
    assert runs_to_decide(iv, crit)["need"] is not None  # the pooled spread alone asks for more
    floor = (first, None, "the first NADs")
    settle = runs_to_decide(iv, crit, floor=floor)
    assert settle["need"] is None and "cannot decide" in settle["why"] and "the first NADs" in settle["why"]
    # and so it is: with 300 indices on the other side the verdict stays undecided
    many = difference_interval(first, exactly(rng, 300, 0.0, 0.006), what="NAD indices")
    assert crit.verdict(many)[0] == "inconclusive"
    # six of the ten measured: the floor is the one at ten, lower than at six
    assert fixed_group_floor(first[:6], 10) < fixed_group_floor(first[:6])
    # a bound beyond the floor keeps the power calculation
    far = Criterion("gap", ">=", 0.5)
    assert runs_to_decide(iv, far, floor=floor)["why"] == runs_to_decide(iv, far)["why"]
    # runs this build trained clear their bound by a redraw's margin, and so does the floor
    wider = fixed_group_floor(first, redrawn=True)
    assert wider > fixed_group_floor(first)
    between = Criterion("gap", ">=", 0.10 - (wider + fixed_group_floor(first)) / 2)
    assert runs_to_decide(iv, between, floor=floor)["why"] == runs_to_decide(iv, between)["why"]
    assert "cannot decide" in runs_to_decide(iv, between, floor=floor, redrawn=True)["why"]


def test_a_campaign_claim_prices_one_more_seed_or_cell_from_its_bundles_ledger():
    from types import SimpleNamespace

    from nadcore.book.setup import bundle_hours_per_unit

    jobs = {
        "1": dict(figure="fig1", model="resnet18?width=16", width=16, seconds=7200, runs=2, seeds=[0]),
        "2": dict(figure="fig1", model="resnet18?width=16", width=16, seconds=3600, runs=1, seeds=[1]),
        "3": dict(figure="fig1", model="vgg11?width=8", width=8, seconds=60, runs=1, seeds=[0]),
        "4": dict(figure="fig3", model="resnet18_nopool?width=16", width=16, seconds=1800, runs=1, seeds=[0]),
    }
    bundle = SimpleNamespace(provenance={"jobs": jobs})
    # one hour a run; a seed is as many runs as the figure's seeds have on average (3 runs, 2 seeds)
    assert bundle_hours_per_unit(bundle, "fig1-x-resnet18", "resnet18", {"width": 16}, "seeds") == 1.5
    # a cell more gets the claim's fewest seeds per cell (its interval is over cells at their seed means)
    assert bundle_hours_per_unit(bundle, "fig1-x", "resnet18", {"width": 16, "seeds": "1-3 per cell"}, "cells") == 1
    assert bundle_hours_per_unit(bundle, "fig1-x", "resnet18", {"width": 16, "seeds": 3}, "cells") == 3
    # Fig. 3's ResNet-18 without its pool is priced by its own runs (the model its row names),
    # and a claim about the pooled network is not priced by them
    nopool = {"width": 16, "model": "resnet18_nopool"}
    assert bundle_hours_per_unit(bundle, "fig3-nopool-x", "resnet18", nopool, "cells") == 0.5
    assert bundle_hours_per_unit(bundle, "fig3-x", "resnet18", {"width": 16}, "cells") is None
    assert bundle_hours_per_unit(bundle, "fig2-x", "resnet18", {"width": 16}, "cells") is None
    assert bundle_hours_per_unit(bundle, "sec3-x", "resnet18", {}, "cells") is None


def test_a_row_on_cifar10_names_its_images_and_why_fewer():
    from nadcore.data.cifar_budget import training_images
    from nadcore.train.budget import cifar_budget

    subset = {"n_train": 5170, "is_subset": True}
    assert training_images(subset) == (5170, 50000, "all of the CIFAR-10 subset this machine holds")
    assert training_images({"n_train": 5170, "source": "subset"})[2].startswith("all of the CIFAR-10 subset")
    assert training_images({**subset, "n_train": 500}, max_train=500) == (500, 50000, "the profile's max_train (500)")
    assert training_images({"n_train": 50000, "is_subset": False}, max_train=None) == (50000, 50000, "")
    # the budget beside them: SGD steps here on those images and in the papers on 50,000
    budget = cifar_budget(dict(epochs=2, batch_size=128), dict(epochs=3, batch_size=100), subset)
    assert budget == dict(steps=2 * 41, paper_steps=3 * 500, samples=training_images(subset))


def test_stratified_interval_weights_each_stratum_by_its_share_of_the_population():
    from scipy.stats import t

    from nadcore.book.evidence import stratified_interval

    easy, hard = np.array([0.0, 0.01, 0.02, 0.0, 0.01, 0.02]), np.array([0.2, 0.3])
    iv = stratified_interval(np.r_[easy, hard], ["e"] * 6 + ["h"] * 2, {"e": 0.25, "h": 0.75}, (0, 1))
    se = np.sqrt(0.25**2 * easy.var(ddof=1) / 6 + 0.75**2 * hard.var(ddof=1) / 2)
    assert iv.value == pytest.approx(0.25 * easy.mean() + 0.75 * hard.mean())  # the sample's mean is 0.07
    assert iv.high - iv.value == pytest.approx(t.ppf(0.975, 8 - 2) * se) == pytest.approx(iv.value - iv.low)
    assert iv.n == 8 and "2 strata" in iv.method
    # a stratum of the population without a value: no value; with one value: no interval
    assert np.isnan(stratified_interval(easy, ["e"] * 6, {"e": 0.25, "h": 0.75}).value)
    one = stratified_interval(np.r_[easy, 0.2], ["e"] * 6 + ["h"], {"e": 0.25, "h": 0.75})
    assert np.isfinite(one.value) and np.isnan(one.low)
    assert stratified_interval(easy, ["e"] * 6, {"e": 1.0, "h": 0.0}).value == pytest.approx(easy.mean())
    with pytest.raises(ValueError, match="sum to"):
        stratified_interval(easy, ["e"] * 6, {"e": 0.5})
    with pytest.raises(ValueError, match="stratum labels"):
        stratified_interval(easy, ["e"] * 5, {"e": 1.0})
