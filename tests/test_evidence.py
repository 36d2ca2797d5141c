"""nadcore.book.evidence: intervals over seeds and verdicts computed from them."""
import math

import numpy as np
import pytest

from nadcore.book.evidence import CLAIM_KEYS, Claim, Criterion, exact_value, read_claims, t_interval, write_claims


def test_t_interval_matches_the_textbook():
    iv = t_interval([1.0, 2.0, 3.0])
    assert iv.value == 2.0 and iv.n == 3
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n)
    assert iv.low == pytest.approx(2 - half) and iv.high == pytest.approx(2 + half)
    one = t_interval([0.7])
    assert one.value == 0.7 and math.isnan(one.low)


@pytest.mark.parametrize("values,op,threshold,verdict", [
    ([0.30, 0.32, 0.31], ">=", 0.05, "reproduced"),            # interval above the criterion
    ([0.00, 0.01, -0.01], ">=", 0.05, "not reproduced"),       # below it
    ([0.0, 0.10, 0.05], ">=", 0.05, "inconclusive"),           # straddling it
    ([0.02, 0.03, 0.025], "<=", 0.05, "reproduced"),
    ([0.2, 0.3, 0.25], "<=", 0.05, "not reproduced"),
    ([0.6], ">=", 0.5, "inconclusive"),                        # one seed: no interval
])
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
    c = Claim.evaluate("x-1", "03_linear_separability", "Fig. 1: ...", Criterion("gap", ">=", 0.05),
                       t_interval([0.2, 0.3, 0.25]), seeds=3, trained=True, budget_fraction=0.5,
                       paper_value=0.4, settings={"grid": "8x8"})
    d = c.to_json()
    assert list(d) == list(CLAIM_KEYS) and d["verdict"] == "reproduced" and d["seeds"] == 3
    assert d["kernel_path"] == ""  # not given: unknown
    k = Claim.evaluate("x-3", "02_nads", "Fig. 6", Criterion("overlap", ">=", 0.5), exact_value(0.7),
                       seeds=1, trained=False, kernel_path="native")
    assert k.to_json()["kernel_path"] == "native"
    e = Claim.evaluate("x-2", "01_pooling", "Thm 1", Criterion("max |z|", "<=", 3.0), exact_value(1.2),
                       seeds=1, trained=False)
    assert e.to_json()["budget_fraction"] is None and e.verdict == "reproduced"  # an exact value decides
    write_claims(tmp_path / "claims" / "a.json", "a", [c, e])
    merged = read_claims(sorted((tmp_path / "claims").glob("*.json")))
    assert [x["id"] for x in merged["claims"]] == ["x-1", "x-2"]
