"""Command line: ``python -m nadcore nads ...`` computes and saves NADs.

    python -m nadcore nads --model SPEC --input-shape C,H,W --networks N --seed S \
        [--method secant|gradient] [--step 100] [--device auto|cpu|cuda] --out FILE.npz

writes ``FILE.npz`` with ``eigenvalues`` (D,), ``nads`` (D, D) one NAD per row in descending
eigenvalue order, and ``meta`` (a JSON string).
"""
from __future__ import annotations

import argparse
import json
import sys


def _shape(text: str):
    try:
        parts = tuple(int(p) for p in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"input shape must look like 1,32,32, got {text!r}")
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"input shape must be three positive integers C,H,W, got {text!r}")
    return parts


def _positive_int(text: str):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if v < 2:
        raise argparse.ArgumentTypeError(f"need at least 2 networks, got {v}")
    return v


def _positive_float(text: str):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"the step must be positive, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    from nadcore import profiles

    default_networks = profiles.SETTINGS["02_nads"]["cpu"]["secant_networks"]["lenet"]
    p = argparse.ArgumentParser(prog="python -m nadcore", description="Neural anisotropy directions.")
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("nads", help="estimate the NADs of an architecture and save them (.npz)")
    n.add_argument("--model", required=True,
                   help="registry name (logreg, lenet, vgg11, resnet18, densenet121, ...) or "
                        "'package.module:factory' with factory(in_channels, num_outputs)")
    n.add_argument("--input-shape", type=_shape, default=(1, 32, 32), help="C,H,W (default 1,32,32)")
    n.add_argument("--networks", type=_positive_int, default=default_networks,
                   help=f"random initialisations (default {default_networks}, the cpu profile's)")
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--method", choices=["secant", "gradient"], default="secant")
    n.add_argument("--step", type=_positive_float, default=100.0, help="secant step h (default 100)")
    n.add_argument("--device", default="auto", help="auto, cpu or cuda")
    n.add_argument("--workers", default="auto", help="CPU worker processes (default: one per core)")
    n.add_argument("--out", required=True, help="output .npz file")
    n.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from nadcore import nads
    from nadcore.models import ModelSpecError

    if args.command == "nads":
        if not args.out.endswith(".npz"):
            print(f"error: --out must name a .npz file, got {args.out!r}", file=sys.stderr)
            return 2
        try:
            r = nads.compute_nads(args.model, args.input_shape, args.networks, args.seed, args.method,
                                  args.step, args.device, workers=args.workers,
                                  progress=not args.quiet)
        except (ModelSpecError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        r.save(args.out)
        print(json.dumps({k: r.meta[k] for k in ("model", "method", "networks", "sampling_seconds",
                                                  "networks_per_second", "device")}))
        print(f"wrote {args.out}: eigenvalues {r.eigenvalues.shape}, nads {r.nads.shape}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
