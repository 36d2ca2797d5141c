"""Command line: ``python -m nadcore nads|compare|show ...``.

    python -m nadcore nads --model SPEC --input-shape C,H,W --networks N --seed S \
        [--method secant|gradient] [--step 100] [--device auto|cpu|cuda]
        [--precision float32|tf32|bf16] --out FILE.npz

writes ``FILE.npz`` with ``eigenvalues`` (D,), ``nads`` (D, D) one NAD per row in descending
eigenvalue order, and ``meta`` (a JSON string).

    python -m nadcore compare A.npz B.npz [--k 1,4,16,64] [--json]

prints the top-k subspace overlaps ``||U_k V_k^T||_F^2 / k`` of two NAD sets (1: same subspace;
about k/D, printed as the chance level, for unrelated ones): a fingerprint distance between two
architectures or two estimators. ``published:ARCH`` stands for the authors' published NADs.

    python -m nadcore show FILE.npz [FILE2.npz ...] --out nads.png [--n 8 | --indices 0,1,100]

draws NADs in pixel space and their Fourier energy (paper Fig. 5) into an image file.

    python -m nadcore predict --model SPEC [--networks 256] [--seed 0] [--device auto] --out map.csv|map.png

predicts the model's Fig. 1 map from its exact-gradient NADs (:mod:`nadcore.nads.predict`: the
energy of the gradient covariance along each Fourier direction, 1 for an average direction) and
writes it as a table (``k1, k2, predicted``) or draws it beside the grid of directions. ``SPEC``
may also be ``published:ARCH`` (the authors' NADs) or a NAD file from ``nads``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from nadcore.data.directions import fourier_grid
from nadcore.nads import NADResult, compute_nads, subspace_overlap
from nadcore.nads.predict import predicted_fig1_map
from nadcore.nads.published import load_published_nads
from nadcore.nets import ModelSpecError


def _shape(text: str):
    try:
        parts = tuple(int(p) for p in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"input shape must look like 1,32,32, got {text!r}")
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"input shape must be three positive integers C,H,W, got {text!r}")
    return parts


def _number(kind, minimum, what: str):
    """An argparse type: ``kind(text)`` that must be at least ``minimum`` (strictly above 0 for
    ``minimum=0.0``), with an error naming ``what``."""

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: expected a number, got {text!r}")
        if v < minimum or (minimum == 0 and v <= 0):
            raise argparse.ArgumentTypeError(
                f"{what} must be {'positive' if minimum == 0 else f'at least {minimum}'}, got {v}"
            )
        return v

    return parse


#: networks of ``nads`` when --networks is not given (the book's cpu profile for LeNet's secant)
DEFAULT_NETWORKS = 4000
#: networks of ``predict`` when --networks is not given (chapter 7's cpu profile for the atlas)
PREDICT_NETWORKS = 256


def build_parser() -> argparse.ArgumentParser:
    default_networks = DEFAULT_NETWORKS
    p = argparse.ArgumentParser(prog="python -m nadcore", description="Neural anisotropy directions.")
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("nads", help="estimate the NADs of an architecture and save them (.npz)")
    n.add_argument(
        "--model",
        required=True,
        help="registry name (logreg, lenet, vgg11, resnet18, densenet121, ...) or "
        "'package.module:factory' with factory(in_channels, num_outputs), or a "
        "timm / torchvision model built from scratch: "
        "'timm:vit_tiny_patch16_224?img_size=32&patch_size=4', 'torchvision:resnet18'",
    )
    n.add_argument("--input-shape", type=_shape, default=(1, 32, 32), help="C,H,W (default 1,32,32)")
    n.add_argument(
        "--networks",
        type=_number(int, 2, "the number of networks"),
        default=default_networks,
        help=f"random initialisations (default {default_networks})",
    )
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--method", choices=["secant", "gradient"], default="secant")
    n.add_argument("--step", type=_number(float, 0.0, "the step"), default=100.0, help="secant step h (default 100)")
    n.add_argument(
        "--points",
        type=_number(int, 1, "the number of evaluation points"),
        default=1,
        help="evaluation points averaged per network (default 1, as the authors)",
    )
    n.add_argument("--device", default="auto", help="auto, cpu or cuda")
    n.add_argument(
        "--precision",
        choices=["float32", "tf32", "bf16"],
        default="float32",
        help="the secant's arithmetic: float32 (IEEE, default), or on a GPU tf32 or bf16 "
        "(tensor cores: faster, less exact; compare with float32 before trusting bf16)",
    )
    n.add_argument(
        "--lanes",
        default="auto",
        type=lambda t: t if t == "auto" else _number(int, 1, "--lanes")(t),
        help="threads sharing the networks on a CPU (default: one per core, at most 8); "
        "the estimate does not depend on it",
    )
    n.add_argument("--out", required=True, help="output .npz file")
    n.add_argument("--quiet", action="store_true", help="no progress bar")

    c = sub.add_parser(
        "compare",
        help="subspace overlap of two saved NAD sets (a fingerprint distance)",
        description="Top-k subspace overlap ||U_k V_k^T||_F^2 / k of two NAD sets: 1 for "
        "the same subspace, about k/D (the chance level) for unrelated ones.",
    )
    c.add_argument("a", metavar="A", help="NAD file (.npz from `nads`) or published:ARCH")
    c.add_argument("b", metavar="B", help="NAD file (.npz from `nads`) or published:ARCH")
    c.add_argument("--k", type=_k_list, default=(1, 4, 16, 64), help="comma-separated k (default 1,4,16,64)")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")

    s = sub.add_parser("show", help="draw the first NADs in pixel and Fourier space (paper Fig. 5)")
    s.add_argument("files", nargs="+", metavar="FILE", help="NAD file(s) (.npz from `nads`) or published:ARCH")
    s.add_argument("--out", required=True, help="image file to write (.png, .pdf, .svg, ...)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--n", type=_number(int, 1, "--n"), default=8, help="draw NADs 0..n-1 (default 8)")
    g.add_argument(
        "--indices", type=_k_list, help="comma-separated NAD indices instead of --n (0 = first)", default=None
    )
    s.add_argument(
        "--title", default=None, help='figure title (default: "NADs: pixel space (top), Fourier energy (bottom)")'
    )
    s.add_argument("--dpi", type=int, default=150)
    q = sub.add_parser("predict", help="predict the Fig. 1 map (which directions are learnable) from the NADs")
    q.add_argument(
        "--model",
        required=True,
        help="a model spec as for `nads` (its exact-gradient NADs are computed), published:ARCH "
        "(the authors' NADs) or a NAD file (.npz from `nads`)",
    )
    q.add_argument(
        "--networks",
        type=_number(int, 2, "the number of networks"),
        default=PREDICT_NETWORKS,
        help=f"random networks for the gradient NADs (default {PREDICT_NETWORKS})",
    )
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--device", default="auto", help="auto, cpu or cuda")
    q.add_argument("--out", required=True, help="map.csv (k1, k2, predicted) or an image (.png, .pdf, .svg)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _k_list(text: str):
    try:
        ks = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,4,16,64, got {text!r}")
    if not ks:
        raise argparse.ArgumentTypeError("no value given")
    return ks


class CLIError(Exception):
    """A usage problem reported as ``error: ...`` with exit status 2."""


def load_nad_file(spec: str):
    """A :class:`~nadcore.nads.NADResult` from a ``.npz`` written by ``nads`` (or NADResult.save),
    or the authors' published NADs for ``published:ARCH``."""
    if spec.startswith("published:"):
        try:
            return load_published_nads(spec.split(":", 1)[1])
        except (FileNotFoundError, ValueError, KeyError) as e:
            raise CLIError(f"{spec}: {e}") from e
    if not os.path.exists(spec):
        raise CLIError(f"{spec}: no such file")
    if os.path.isdir(spec):
        raise CLIError(f"{spec}: is a directory, not a NAD file")
    try:
        r = NADResult.load(spec)
    except KeyError as e:
        raise CLIError(f"{spec}: not a NAD file (needs the arrays 'eigenvalues' and 'nads'; missing {e})") from e
    except Exception as e:  # noqa: BLE001 - zip/pickle/format errors of a foreign file
        raise CLIError(
            f"{spec}: cannot read it as a NAD file (.npz from `python -m nadcore nads`): {type(e).__name__}: {e}"
        ) from e
    if r.nads.ndim != 2 or r.eigenvalues.ndim != 1 or r.nads.shape[0] != r.eigenvalues.shape[0]:
        raise CLIError(
            f"{spec}: not a NAD file: 'nads' {r.nads.shape} must be (K, D) with one NAD per "
            f"row and 'eigenvalues' ({r.eigenvalues.shape}) of length K"
        )
    return r


def describe(r, spec: str) -> str:
    """One line on what a NAD set holds: model, method, networks, dimension."""
    m = r.meta or {}
    parts = [str(m.get("model", "?"))]
    if m.get("method"):
        parts.append(str(m["method"]))
    if m.get("networks"):
        parts.append(f"{m['networks']} networks")
    parts.append(f"{r.nads.shape[0]} NADs of dimension {r.nads.shape[1]}")
    return f"{spec}: " + ", ".join(parts)


def compare(a_spec: str, b_spec: str, ks) -> dict:
    """Top-k subspace overlaps of two NAD sets and the chance level k/D (CLIError on bad input)."""
    a, b = load_nad_file(a_spec), load_nad_file(b_spec)
    if a.nads.shape[1] != b.nads.shape[1]:
        raise CLIError(
            f"the NAD sets have different dimensions: {a_spec} has D={a.nads.shape[1]}, "
            f"{b_spec} has D={b.nads.shape[1]} (compare NADs of the same input shape)"
        )
    D = a.nads.shape[1]
    avail = min(a.nads.shape[0], b.nads.shape[0])
    bad = [k for k in ks if k < 1 or k > avail]
    if bad:
        raise CLIError(
            f"k={','.join(map(str, bad))} out of range: k must be between 1 and {avail} "
            f"({a_spec} holds {a.nads.shape[0]} NADs, {b_spec} {b.nads.shape[0]})"
        )
    rows = []
    for k in ks:
        o = subspace_overlap(a.nads, b.nads, k)
        rows.append({"k": k, "overlap": o, "chance": k / D, "distance": 1.0 - o})
    return {"a": describe(a, a_spec), "b": describe(b, b_spec), "D": D, "rows": rows}


def _print_compare(res: dict) -> None:
    print(f"A = {res['a']}")
    print(f"B = {res['b']}")
    print("top-k subspace overlap ||U_k V_k^T||_F^2 / k  (1 = same subspace, k/D = chance; distance = 1 - overlap)")
    print(f"{'k':>6} {'overlap':>9} {'chance k/D':>11} {'distance':>9}")
    for r in res["rows"]:
        print(f"{r['k']:>6d} {r['overlap']:>9.4f} {r['chance']:>11.4f} {r['distance']:>9.4f}")


def show(files, out: str, n: int = 8, indices=None, title=None, dpi: int = 150) -> str:
    """Draw the NADs ``indices`` (default 0..n-1) of every file with :func:`nadcore.chapters.nads.figures.nad_grid`."""
    import matplotlib.pyplot as plt  # only this command draws: matplotlib loads here

    from nadcore.chapters.nads.figures import nad_grid

    results = {}
    for spec in files:
        r = load_nad_file(spec)
        m = r.meta or {}
        if spec.startswith("published:"):
            label = f"{spec.split(':', 1)[1]} (published)"
        elif m.get("method"):
            label = f"{m.get('model', os.path.basename(spec))} ({m['method']})"
        else:
            label = str(m.get("model", os.path.splitext(os.path.basename(spec))[0]))
        while label in results:
            label += "'"
        results[label] = r
    idx = list(indices) if indices is not None else list(range(n))
    avail = min(r.nads.shape[0] for r in results.values())
    bad = [i for i in idx if not 0 <= i < avail]
    if bad:
        raise CLIError(f"NAD indices {bad[:5]} out of range: the file(s) hold {avail} NADs (use 0..{avail - 1})")
    shapes = {r.nads.shape[1] for r in results.values()}
    for r in results.values():
        side = round(r.nads.shape[1] ** 0.5)
        shape = tuple(r.input_shape)
        if side * side != r.nads.shape[1] and (len(shape) != 3 or shape[0] * shape[1] * shape[2] != r.nads.shape[1]):
            raise CLIError(f"cannot draw NADs of dimension {r.nads.shape[1]} as images")
    if len(shapes) > 1:
        print(f"note: the files have different dimensions {sorted(shapes)}", file=sys.stderr)
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    if ext not in plt.gcf().canvas.get_supported_filetypes():
        plt.close("all")
        raise CLIError(f"--out {out!r}: unknown image format {ext!r} (use .png, .pdf or .svg)")
    plt.close("all")
    fig = nad_grid(
        _as_images(results),
        indices=idx,
        title=title if title is not None else "NADs: pixel space (top), Fourier energy (bottom)",
    )
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def predict(
    model: str, out: str, networks: int = PREDICT_NETWORKS, seed: int = 0, device: str = "auto", progress: bool = False
) -> tuple[str, dict]:
    """Write the Fig. 1 map predicted from ``model``'s NADs (:func:`nadcore.nads.predict.predicted_fig1_map`)
    to ``out`` (.csv: ``k1, k2, predicted``; an image: the map beside the grid of directions);
    returns ``(out, meta)``."""
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    images = ("png", "pdf", "svg", "jpg", "jpeg")
    if ext != "csv" and ext not in images:
        raise CLIError(f"--out {out!r}: write a table (.csv) or an image (.png, .pdf, .svg)")
    t0 = time.perf_counter()
    if model.startswith("published:") or model.endswith(".npz"):
        r = load_nad_file(model)
    else:
        try:
            r = compute_nads(model, (1, 32, 32), networks, seed, "gradient", device=device, progress=progress)
        except (ModelSpecError, ValueError) as e:
            raise CLIError(str(e)) from e
    if r.nads.shape[1] != 1024:
        raise CLIError(f"{model}: NADs of dimension {r.nads.shape[1]}; the Fig. 1 grid needs 1x32x32 inputs")
    grid = fourier_grid(32)
    score = predicted_fig1_map(r, grid)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if ext == "csv":
        k1, k2 = grid.k1.ravel(), grid.k2.ravel()
        rows = "\n".join(f"{a},{b},{v:.6g}" for a, b, v in zip(k1, k2, score.ravel()))
        tmp = out + ".part"
        with open(tmp, "w") as f:
            f.write("k1,k2,predicted\n" + rows + "\n")
        os.replace(tmp, out)
    else:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from nadcore.chapters.nad_atlas.figures import predicted_beside_directions

        m = r.meta or {}
        fig = predicted_beside_directions(
            score,
            grid,
            title=f"{model}: Fig. 1 predicted from {m.get('networks', '?')} networks' {m.get('method', '')} NADs",
        )
        tmp = f"{out}.part"
        fig.savefig(tmp, dpi=120, format=ext)
        plt.close(fig)
        os.replace(tmp, out)
    meta = {
        "model": model,
        "networks": (r.meta or {}).get("networks"),
        "seconds": round(time.perf_counter() - t0, 1),
        "highest": list(grid.frequencies[int(np.argmax(score))]),
        "spread_log10": round(float(np.log10(score.max() / score.min())), 3),
    }
    return out, meta


def _as_images(results: dict) -> dict:
    """nad_grid draws square single-channel NADs; multi-channel ones are summed over channels
    for the pixel view (their Fourier energy is the sum over channels either way)."""

    out = {}
    for label, r in results.items():
        shape = tuple(r.input_shape)
        if len(shape) == 3 and shape[0] > 1 and shape[0] * shape[1] * shape[2] == r.nads.shape[1]:
            out[label] = r.nads.reshape(-1, *shape).sum(1).reshape(r.nads.shape[0], -1)
        else:
            out[label] = r
    return out


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)

    if args.command == "nads":
        if not args.out.endswith(".npz"):
            print(f"error: --out must name a .npz file, got {args.out!r}", file=sys.stderr)
            return 2
        try:
            r = compute_nads(
                args.model,
                args.input_shape,
                args.networks,
                args.seed,
                args.method,
                args.step,
                args.device,
                points=args.points,
                progress=not args.quiet,
                precision=args.precision,
                lanes=args.lanes,
            )
        except (ModelSpecError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        r.save(args.out)
        print(
            json.dumps(
                {
                    k: r.meta[k]
                    for k in (
                        "model",
                        "method",
                        "networks",
                        "sampling_seconds",
                        "networks_per_second",
                        "device",
                        "precision",
                        "sampling_path",
                        "kernel_path",
                    )
                }
            )
        )
        print(f"wrote {args.out}: eigenvalues {r.eigenvalues.shape}, nads {r.nads.shape}")
    elif args.command == "compare":
        try:
            res = compare(args.a, args.b, args.k)
        except CLIError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(res, indent=1))
        else:
            _print_compare(res)
    elif args.command == "show":
        import matplotlib

        matplotlib.use("Agg")  # the command line never needs a display
        try:
            out = show(args.files, args.out, args.n, args.indices, args.title, args.dpi)
        except CLIError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        idx = args.indices if args.indices is not None else range(args.n)
        print(
            f"wrote {out}: NADs {', '.join(map(str, idx))} of {len(args.files)} file(s), "
            "pixel space (top) and Fourier energy (bottom)"
        )
    elif args.command == "predict":
        try:
            out, meta = predict(args.model, args.out, args.networks, args.seed, args.device, not args.quiet)
        except CLIError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(json.dumps(meta))
        print(f"wrote {out}: the Fig. 1 map predicted from the NADs of {args.model}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
