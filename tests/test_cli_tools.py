"""`python -m nadcore compare` and `show` (nadcore.__main__): the researcher's NAD tool (README,
"The NAD tool")."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import nadcore.__main__ as cli
from nadcore import nads
from nadcore.nads import NADResult


def _basis(seed: int, D: int) -> np.ndarray:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((D, D)))
    return Q.T.copy()


def _save(path, U, model="toy", method="gradient", networks=10):
    side = int(round(U.shape[1] ** 0.5))
    r = NADResult(
        np.linspace(1.0, 0.01, U.shape[0]),
        U,
        {"model": model, "method": method, "networks": networks, "input_shape": [1, side, side]},
    )
    return str(r.save(path))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nadfiles")
    U = _basis(0, 64)
    out = {
        "a": _save(d / "a.npz", U, model="alpha"),
        "a_again": _save(d / "a2.npz", U[[1, 0, *range(2, 64)]], model="alpha-swapped"),
        "b": _save(d / "b.npz", _basis(1, 64), model="beta"),
        "short": _save(d / "short.npz", U[:8], model="short"),
        "small": _save(d / "small.npz", _basis(2, 16), model="small"),
    }
    np.savez(d / "other.npz", weights=np.zeros(3))
    out["other"] = str(d / "other.npz")
    (d / "junk.npz").write_bytes(b"not a zip file")
    out["junk"] = str(d / "junk.npz")
    out["dir"] = str(d)
    # real NADs, computed the way the CLI's `nads` command does (logistic regression, 8x8 inputs)
    r = nads.compute_nads("logreg", (1, 8, 8), 32, seed=0, method="gradient", device="cpu", lanes=1)
    out["logreg"] = str(r.save(d / "logreg.npz"))
    return out


def _run(argv, capsys):
    rc = cli.main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_compare_prints_overlaps_and_chance(files, capsys):
    rc, out, err = _run(["compare", files["a"], files["a_again"], "--k", "1,2,16"], capsys)
    assert rc == 0, err
    assert "alpha, gradient, 10 networks, 64 NADs of dimension 64" in out
    lines = {
        int(l.split()[0]): [float(x) for x in l.split()[1:]]
        for l in out.splitlines()
        if l.strip() and l.split()[0].isdigit()
    }
    assert set(lines) == {1, 2, 16}
    assert lines[1][0] == pytest.approx(0.0, abs=1e-9)  # NAD 0 and 1 swapped: k=1 differs ...
    assert lines[2][0] == pytest.approx(1.0)  # ... but the top-2 subspace is the same
    assert lines[16][1] == pytest.approx(16 / 64)  # chance column k/D
    assert lines[16][2] == pytest.approx(1 - lines[16][0])  # distance = 1 - overlap


def test_compare_json_and_unrelated_sets_near_chance(files, capsys):
    rc, out, err = _run(["compare", files["a"], files["b"], "--json"], capsys)
    assert rc == 0, err
    res = json.loads(out)
    assert res["D"] == 64 and [r["k"] for r in res["rows"]] == [1, 4, 16, 64]
    for r in res["rows"]:
        assert r["chance"] == pytest.approx(r["k"] / 64)
        assert 0.0 <= r["overlap"] <= 1.0 + 1e-9
    assert res["rows"][-1]["overlap"] == pytest.approx(1.0)  # k = D: the whole space
    assert res["rows"][2]["overlap"] < 0.6  # unrelated 16-dim subspaces


def test_compare_real_nads(files, capsys):
    rc, out, err = _run(["compare", files["logreg"], files["logreg"], "--k", "1,4"], capsys)
    assert rc == 0, err
    assert "logreg, gradient, 32 networks" in out
    assert all(abs(float(l.split()[1]) - 1.0) < 1e-6 for l in out.splitlines()[-2:])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "{a}", "{missing}"], "no such file"),
        (["compare", "{a}", "{dir}"], "is a directory"),
        (["compare", "{a}", "{small}"], "different dimensions: {a} has D=64, {small} has D=16"),
        (["compare", "{a}", "{short}", "--k", "4,16"], "k=16 out of range: k must be between 1 and 8"),
        (["compare", "{a}", "{b}", "--k", "0"], "k=0 out of range"),
        (["compare", "{a}", "{other}"], "not a NAD file"),
        (["compare", "{a}", "{junk}"], "cannot read it as a NAD file"),
        (["show", "{missing}", "--out", "{png}"], "no such file"),
        (["show", "{a}", "--out", "{png}", "--indices", "0,64"], "NAD indices [64] out of range"),
        (["show", "{short}", "--out", "{png}", "--n", "9"], "file(s) hold 8 NADs"),
        (["show", "{a}", "--out", "{dir}/x.xyz"], "unknown image format 'xyz'"),
        (
            [
                "nads",
                "--model",
                "lenet",
                "--networks",
                "4",
                "--method",
                "gradient",
                "--precision",
                "bf16",
                "--out",
                "{dir}/g.npz",
                "--quiet",
            ],
            "tf32 and bf16 for the secant only",
        ),
    ],
)
def test_usage_errors(files, tmp_path, capsys, argv, message):
    fmt = dict(files, missing=str(tmp_path / "nothere.npz"), png=str(tmp_path / "x.png"))
    rc, out, err = _run([a.format(**fmt) for a in argv], capsys)
    assert rc == 2
    assert err.startswith("error: ") and message.format(**fmt) in err, err
    assert not (tmp_path / "x.png").exists()


def test_bad_k_is_an_argparse_error(files, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", files["a"], files["b"], "--k", "one"])
    assert e.value.code == 2 and "comma-separated integers" in capsys.readouterr().err


@pytest.mark.parametrize(
    "lanes, message", [("0", "--lanes must be at least 1, got 0"), ("two", "--lanes: expected a number, got 'two'")]
)
def test_bad_lanes_is_an_argparse_error(tmp_path, capsys, lanes, message):
    with pytest.raises(SystemExit) as e:
        cli.main(
            [
                "nads",
                "--model",
                "logreg",
                "--networks",
                "4",
                "--lanes",
                lanes,
                "--out",
                str(tmp_path / "l.npz"),
                "--quiet",
            ]
        )
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "l.npz").exists()


def test_show_draws_pixel_and_fourier_rows(files, tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "sub" / "nads.png"
    rc, text, err = _run(["show", files["a"], files["logreg"], "--n", "3", "--out", str(out), "--dpi", "60"], capsys)
    assert rc == 0, err
    assert "wrote" in text and "NADs 0, 1, 2 of 2 file(s)" in text
    img = np.asarray(Image.open(out).convert("L"), dtype=float)
    assert min(img.shape) > 100 and img.std() > 10  # a real figure, not an empty canvas
    out2 = tmp_path / "pick.svg"
    rc, text, err = _run(["show", files["a"], "--indices", "0,5,63", "--out", str(out2)], capsys)
    assert rc == 0, err
    assert out2.read_text().lstrip().startswith("<?xml") and "NADs 0, 5, 63" in text


def test_module_entry_point(files):
    run = subprocess.run(
        [sys.executable, "-m", "nadcore", "compare", files["a"], files["b"], "--k", "1,4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "chance k/D" in run.stdout and "0.0625" in run.stdout
