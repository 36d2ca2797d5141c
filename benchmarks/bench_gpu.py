"""GPU timings of the paper profile: NADs of the five architectures and Fig. 1 training.

Run on a machine with a GPU:  python benchmarks/bench_gpu.py [--quick] [--json out.json]
    [--budget 540] [--full resnet18:bf16,densenet121:tf32]
The GPU tables of benchmarks/README.md from the JSON files of one or more runs (later files win):
    python benchmarks/bench_gpu.py --table run1.json run2.json ...

Sections, each written to the JSON file as soon as it is done, each skipped once ``--budget``
seconds have passed (so that a time-limited lease still returns what was measured):

* ``accuracy``: the secant sensitivities of two networks per architecture, computed on the GPU
  by ``nadcore.nads.sampling.Sampler`` (the book's path) in each precision (float32, tf32,
  bf16), against a float64 CPU reference on 64 random coordinates: relative error and cosine.
* ``secant``: ``compute_nads(method="secant")`` networks per second in each precision (LogReg and
  LeNet: float32 only), each after a warm-up run; the number of networks is chosen from the
  float32 warm-up's rate (about ``--seconds`` per measurement) and is the same for every
  precision, so the estimates share their networks: their top-k subspace overlaps with the
  float32 estimate say what the precision changes, beside the split-half overlap of the float32
  estimate (what Monte Carlo noise changes). The time for the paper's 10,000 networks is
  extrapolated from the rate.
* ``gradient``: the same for ``method="gradient"`` (float32 only).
* ``fig1``: chapter 3's Fig. 1 training on the paper profile's settings (``directional_job``,
  the book's job function: data, ``train_many``, evaluation), a few runs of 2 epochs per
  architecture after a warm-up job; seconds per run and epoch, extrapolated to the paper's grid
  (256 cells x 3 seeds x its epochs). The extrapolation counts the data and evaluation time of a
  run with its epochs, so it errs high. ``--fig1-workers W``: W processes share the device, one
  job each (what ``workers`` does in chapter 3).
* ``train``: training throughput of :func:`nadcore.train.train_side_by_side` (the paper-scale
  trainer: R runs side by side, bf16 autocast and channels-last on CUDA) per architecture, in
  training images per second (forward + backward + SGD step, all runs together), and the fraction
  of the GPU's bf16 matrix-product peak (``peak``) that 3x the forward FLOPs per image make
  (``nadcore.nets.forward_flops``); ``--train-runs R`` runs together (default 16), and on CUDA
  also without channels-last and with ``torch.compile`` (``--train-compile``), each checked
  against the first configuration's losses. On the CPU (``--device cpu --quick``) a smoke test.
* ``full`` (``--full``): ``compute_nads`` of the paper's 10,000 networks for the given
  architectures and precisions, timed whole.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from common import machine  # noqa: E402

from nadcore import nads  # noqa: E402
from nadcore.book import profiles  # noqa: E402
from nadcore.book.runner import make_executor  # noqa: E402
from nadcore.chapters.linear_separability import runs as sep  # noqa: E402
from nadcore.data import fourier_basis_vector, fourier_grid  # noqa: E402
from nadcore.kernels.precision import PRECISIONS  # noqa: E402
from nadcore.nads.estimators import evaluation_point  # noqa: E402
from nadcore.nads.published import load_published_nads  # noqa: E402
from nadcore.nads.sampling import Sampler, network_seeds  # noqa: E402
from nadcore.nets import build_model, forward_flops, initialise  # noqa: E402
from nadcore.nets.variants import TINY  # noqa: E402
from nadcore.train import train_side_by_side  # noqa: E402

ARCHS = ["logreg", "lenet", "vgg11", "resnet18", "densenet121"]
SHAPE = (1, 32, 32)
PAPER_NETWORKS = 10000


class Run:
    """The benchmark's state: results so far, the deadline, the JSON file."""

    def __init__(self, args):
        self.a, self.t0 = args, time.perf_counter()
        self.dev = torch.device(args.device)
        self.out = {
            "machine": machine(),
            "device": str(self.dev),
            "args": vars(args),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        if self.dev.type == "cuda":
            self.out["cuda"] = {
                "name": torch.cuda.get_device_name(self.dev),
                "cudnn": torch.backends.cudnn.version(),
                "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            }

    def left(self) -> float:
        return self.a.budget - (time.perf_counter() - self.t0)

    def save(self):
        if self.a.json:
            Path(self.a.json).write_text(json.dumps(self.out, indent=1, default=float))

    def section(self, name, fn, *args):
        if self.left() <= 0:
            self.out.setdefault("skipped", []).append(name)
            print(f"[{name}] skipped: budget spent", flush=True)
            return
        t = time.perf_counter()
        try:
            fn(*args)
        except Exception as e:  # keep what the other sections measure
            self.out.setdefault("errors", {})[name] = f"{type(e).__name__}: {e}"
            print(f"[{name}] FAILED: {type(e).__name__}: {e}", flush=True)
        print(f"[{name}] {time.perf_counter() - t:.1f} s (elapsed {time.perf_counter() - self.t0:.0f} s)", flush=True)
        self.save()

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)


def bf16_peak(run: Run, n: int = 8192) -> None:
    """The bf16 matrix-product rate of this GPU (median of 10), for scale."""
    if run.dev.type != "cuda":
        return
    a = torch.randn(n, n, device=run.dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=run.dev, dtype=torch.bfloat16)
    times = []
    for _ in range(13):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        a @ b
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    run.out["bf16_matmul_tflops"] = round(2 * n**3 / float(np.median(times[3:])) / 1e12, 1)
    print(f"bf16 matmul {run.out['bf16_matmul_tflops']} TFLOP/s", flush=True)


def _reference_secant(arch: str, seed_n: int, x: torch.Tensor, coords: np.ndarray, step=100.0):
    """float64 CPU central differences of network ``seed_n`` at ``coords``."""
    m = build_model(arch, 1, 1, 32, check=False)
    initialise(m, seed_n)
    m = m.double().eval()
    D = x.numel()
    E = torch.zeros(len(coords), D, dtype=torch.float64)
    E[torch.arange(len(coords)), torch.as_tensor(coords)] = step
    X = x.double().reshape(1, D)
    with torch.no_grad():
        f = lambda z: m(z.reshape(-1, *SHAPE)).reshape(-1)  # noqa: E731
        return ((f(X + E) - f(X - E)) / (2 * step)).numpy()


def accuracy(run: Run, archs) -> None:
    rng = np.random.default_rng(0)
    coords = np.sort(rng.choice(int(np.prod(SHAPE)), 64, replace=False))
    x = evaluation_point(SHAPE, 0)
    res = {}
    for arch in archs:
        ref = np.stack([_reference_secant(arch, s, x, coords) for s in network_seeds(0, [0, 1])])
        row = {}
        for prec in PRECISIONS:
            sampler = Sampler(arch, SHAPE, 0, "secant", 100.0, run.dev, "auto", 1, prec)
            G = sampler.rows(np.arange(2))[0][:, coords]
            rel = float(np.linalg.norm(G - ref) / np.linalg.norm(ref))
            cos = float(min(np.dot(g, r) / np.linalg.norm(g) / np.linalg.norm(r) for g, r in zip(G, ref)))
            row[prec] = {"rel_error": rel, "min_cosine": cos}
        res[arch] = row
        print(
            f"accuracy {arch}: "
            + ", ".join(f"{p} rel {v['rel_error']:.2e} cos {v['min_cosine']:.6f}" for p, v in row.items()),
            flush=True,
        )
        run.out["accuracy"] = res


def _timed_nads(run: Run, arch, method, n, precision="float32"):
    r = nads.compute_nads(arch, SHAPE, n, seed=0, method=method, device=str(run.dev), precision=precision)
    return r, r.meta["networks_per_second"]


def _pick_n(rate: float, seconds: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, 8 * round(rate * seconds / 8))))


def secant(run: Run, archs) -> None:
    res = run.out.setdefault("secant", {})
    for arch in archs:
        if run.left() <= 0:
            break
        warm = 2 * (64 if arch in ("lenet", "logreg") else 2 if run.a.quick else 16)
        _, r0 = _timed_nads(run, arch, "secant", warm)
        n = _pick_n(r0, run.a.seconds, warm, PAPER_NETWORKS if arch != "logreg" else 20000)
        row = {"networks": n}
        results = {}
        for prec in PRECISIONS if arch not in ("logreg", "lenet") else ("float32",):
            if prec != "float32":
                _timed_nads(run, arch, "secant", warm, prec)  # warm-up of this precision's kernels
            results[prec], rate = _timed_nads(run, arch, "secant", n, prec)
            row[prec] = {"networks_per_second": rate, "minutes_for_10000": PAPER_NETWORKS / rate / 60}
            if prec != "float32":
                row[prec]["overlap_with_float32"] = {
                    f"k={k}": nads.identifiable_overlap(results["float32"], results[prec], k) for k in nads.OVERLAP_KS
                }
        row["split_half_float32"] = dict(
            zip([f"k={k}" for k in nads.OVERLAP_KS], map(float, results["float32"].extras["split_half"]))
        )
        res[arch] = row
        print(f"secant {arch}: {json.dumps(row, default=float)}", flush=True)
        run.save()


def gradient(run: Run, archs) -> None:
    res = run.out.setdefault("gradient", {})
    for arch in archs:
        if run.left() <= 0:
            break
        warm = 512 if arch in ("lenet", "logreg") else 4 if run.a.quick else 32
        _, r0 = _timed_nads(run, arch, "gradient", warm)
        n = _pick_n(r0, run.a.seconds / 2, warm, 100000)
        _, rate = _timed_nads(run, arch, "gradient", n)
        res[arch] = {
            "networks": n,
            "networks_per_second": rate,
            "minutes_for_paper": profiles.resolve("02_nads", "paper")["gradient_networks"][arch] / rate / 60,
        }
        print(f"gradient {arch}: {res[arch]}", flush=True)
        run.save()


def fig1(run: Run, archs) -> None:

    cfg = profiles.resolve("03_linear_separability", "paper")
    cells = fourier_grid(32, cfg["grid"]).frequencies
    res = run.out.setdefault("fig1", {})
    for arch in archs:
        if run.left() <= 0:
            break
        s = {k: cfg[k] for k in ("sigma", "epsilon", "signal", "n_test")} | cfg["train"].get(
            arch, cfg["train"]["default"]
        )
        if run.a.quick:
            s |= {"n_train": 512, "n_test": 256}
        runs = min(cfg["chunk"], 16 if arch in ("lenet", "logreg") else 2)
        epochs = 1 if run.a.quick else 2
        sel = [cells[i] for i in range(0, len(cells), max(1, len(cells) // runs))][:runs]
        V = np.stack([fourier_basis_vector(a, b, 32).numpy() for a, b in sel])
        W = max(1, run.a.fig1_workers)
        ex = make_executor(W)  # None for 1: in this process
        timings = []
        for rep in range(2):  # the first is a warm-up (and starts the worker processes)
            jobs = [
                sep.direction_jobs(
                    V,
                    [list(c) for c in sel],
                    [2 * rep + w],
                    model=arch,
                    settings=s | {"epochs": epochs},
                    chunk=runs,
                    device=str(run.dev),
                    outputs=cfg["outputs"],
                )[0]
                for w in range(W)
            ]
            run.sync()
            t = time.perf_counter()
            if ex is None:
                out = [sep.directional_job(jobs[0].config, jobs[0].data["vectors"], str(run.dev))]
            else:
                out = list(
                    ex.map(
                        sep.directional_job,
                        [j.config for j in jobs],
                        [j.data["vectors"] for j in jobs],
                        [str(run.dev)] * W,
                    )
                )
            run.sync()
            timings.append(time.perf_counter() - t)
        if ex is not None:
            ex.shutdown()
        arrays = {"test_acc": np.concatenate([o[0]["test_acc"] for o in out])}
        runs *= W
        per = timings[-1] / (runs * epochs)
        total_runs = len(cells) * cfg["seeds"]
        res[arch] = {
            "runs_together": runs,
            "processes": W,
            "epochs": epochs,
            "seconds": timings[-1],
            "seconds_per_run_epoch": per,
            "paper_epochs": s["epochs"],
            "paper_runs": total_runs,
            "hours_for_paper_fig1": per * s["epochs"] * total_runs / 3600,
            "mean_test_acc": float(np.mean(arrays["test_acc"])),
        }
        print(f"fig1 {arch}: {res[arch]}", flush=True)
        run.save()


def train(run: Run, archs) -> None:
    """Images/s of train_side_by_side per architecture and its fraction of the bf16 peak."""
    res = run.out.setdefault("train", {})
    cuda = run.dev.type == "cuda"
    R = 2 if run.a.quick else run.a.train_runs
    B, steps = (32, 3) if run.a.quick else (128, 30)
    peak = run.out.get("bf16_matmul_tflops")
    variants = [("bf16, channels-last" if cuda else "float32", dict(autocast="bf16" if cuda else None))]
    if cuda:
        variants.append(("bf16, NCHW", dict(autocast="bf16", channels_last=False)))
        if run.a.train_compile:
            variants.append(("bf16, channels-last, compiled", dict(autocast="bf16", compile=True)))
    for arch in archs:
        spec = TINY.get(arch, arch) if run.a.quick else arch
        flops = 3 * forward_flops(build_model(spec, 1, 2, seed=0, check=False), SHAPE)
        g = torch.Generator().manual_seed(0)
        xs = torch.randn(R, B * steps, *SHAPE, generator=g)
        ys = torch.randint(0, 2, (R, B * steps), generator=g)
        out, ref = {}, None
        for name, kw in variants:
            if run.left() <= 0:
                break
            timings = []
            for rep in range(2):  # the first is a warm-up (cuDNN autotuning, compilation)
                models = [build_model(spec, 1, 2, seed=r, check=False) for r in range(R)]
                run.sync()
                t = time.perf_counter()
                r = train_side_by_side(
                    models,
                    xs,
                    ys,
                    epochs=1,
                    batch_size=B,
                    max_lr=0.1,
                    momentum=0.9,
                    weight_decay=1e-5,
                    generators=[torch.Generator().manual_seed(i) for i in range(R)],
                    dropout_generators=[torch.Generator(device=run.dev).manual_seed(i) for i in range(R)],
                    device=run.dev,
                    **kw,
                )
                run.sync()
                timings.append(time.perf_counter() - t)
            losses = np.stack([x.iter_loss for x in r])
            ref = losses if ref is None else ref
            ips = R * B * steps / timings[-1]
            out[name] = {
                "runs": R,
                "batch": B,
                "steps": steps,
                "images_per_s": round(ips, 1),
                "tflops": round(ips * flops / 1e12, 2),
                "fraction_of_bf16_peak": round(ips * flops / (peak * 1e12), 4) if peak else None,
                "max_loss_difference_vs_first": float(np.abs(losses - ref).max()),
            }
            print(f"train {arch} [{name}]: {out[name]}", flush=True)
        res[arch] = {"spec": spec, "train_flops_per_image": flops, **out}
        run.save()


def full(run: Run, spec: str) -> None:
    res = run.out.setdefault("full", {})
    for item in spec.split(","):
        arch, _, prec = item.partition(":")
        if run.left() <= 0:
            break
        t = time.perf_counter()
        r = nads.compute_nads(
            arch, SHAPE, PAPER_NETWORKS, seed=0, method="secant", device=str(run.dev), precision=prec or "float32"
        )
        res[item] = {
            "seconds_total": time.perf_counter() - t,
            "sampling_seconds": r.meta["sampling_seconds"],
            "networks_per_second": r.meta["networks_per_second"],
            "split_half": [float(v) for v in r.extras["split_half"]],
        }
        try:
            pub = load_published_nads(arch)
            res[item]["overlap_published"] = {
                f"k={k}": nads.subspace_overlap(r.nads, pub.nads, k) for k in nads.OVERLAP_KS
            }
        except Exception as e:  # noqa: BLE001  (no published NADs for this architecture)
            res[item]["overlap_published"] = str(e)
        print(f"full {item}: {res[item]}", flush=True)
        run.save()


def table(paths) -> str:
    """Markdown tables of the runs in ``paths`` (JSON files of this script; later files win)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    merged = {}
    for r in runs:
        for sec in ("accuracy", "secant", "gradient", "fig1", "full"):
            merged.setdefault(sec, {}).update(r.get(sec) or {})
    m = runs[-1]
    gpu = (m.get("cuda") or {}).get("name", m["machine"].get("gpu"))
    lines = [
        f"GPU: {gpu}, {m['machine']['cores']} CPU cores, torch {m['machine']['torch']}; "
        f"`python benchmarks/bench_gpu.py`, {len(runs)} run(s)"
        + (
            f", dates {', '.join(sorted({r['date'] for r in runs if 'date' in r}))}"
            if any("date" in r for r in runs)
            else ""
        ),
        "",
    ]
    fmt = lambda v, f="{:.3g}": "-" if v is None else f.format(v)  # noqa: E731
    if merged["secant"]:
        lines += [
            "| secant NADs | precision | networks/s | 10,000 networks | rel. error vs float64 | "
            "top-16 overlap with float32 |",
            "|---|---|---|---|---|---|",
        ]
        for arch, row in merged["secant"].items():
            for prec in ("float32", "tf32", "bf16"):
                if prec not in row:
                    continue
                acc = merged["accuracy"].get(arch, {}).get(prec, {})
                ov = row[prec].get("overlap_with_float32", {}).get("k=16")
                lines.append(
                    f"| {arch} | {prec} | {fmt(row[prec]['networks_per_second'])} | "
                    f"{fmt(row[prec]['minutes_for_10000'], '{:.1f} min')} | {fmt(acc.get('rel_error'), '{:.1e}')} | "
                    f"{fmt(ov, '{:.4f}')} |"
                )
        lines.append("")
    if merged["full"]:
        lines += [
            "| 10,000 networks, timed whole | seconds | networks/s | top-16 overlap with the published NADs |",
            "|---|---|---|---|",
        ]
        for item, row in merged["full"].items():
            pub = row.get("overlap_published")
            lines.append(
                f"| {item.replace(':', ', ')} | {row['seconds_total']:.0f} | {fmt(row['networks_per_second'])} | "
                f"{fmt(pub.get('k=16') if isinstance(pub, dict) else None, '{:.3f}')} |"
            )
        lines.append("")
    if merged["gradient"]:
        paper = profiles.resolve("02_nads", "paper")["gradient_networks"]
        lines += ["| gradient NADs (float32) | networks/s | the paper profile's networks | time |", "|---|---|---|---|"]
        for arch, row in merged["gradient"].items():
            lines.append(
                f"| {arch} | {fmt(row['networks_per_second'])} | {paper[arch]:,} | {row['minutes_for_paper']:.1f} min |"
            )
        lines.append("")
    if merged["fig1"]:
        lines += [
            "| Fig. 1 training | runs at a time (processes) | seconds per run and epoch | paper's epochs x runs | "
            "extrapolated time |",
            "|---|---|---|---|---|",
        ]
        for arch, row in merged["fig1"].items():
            lines.append(
                f"| {arch} | {row['runs_together']} ({row.get('processes', 1)}) | {row['seconds_per_run_epoch']:.3f} | "
                f"{row['paper_epochs']} x {row['paper_runs']} | {row['hours_for_paper_fig1']:.1f} h |"
            )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument(
        "--sections", default="accuracy,secant,gradient,fig1,train", help="in this order; 'full' runs --full"
    )
    ap.add_argument("--seconds", type=float, default=12.0, help="target seconds per timed measurement")
    ap.add_argument("--budget", type=float, default=540.0, help="seconds after which sections are skipped")
    ap.add_argument(
        "--fig1-workers",
        type=int,
        default=1,
        help="processes sharing the device for the Fig. 1 jobs (one job of runs each)",
    )
    ap.add_argument("--train-runs", type=int, default=16, help="runs trained side by side in 'train'")
    ap.add_argument("--train-compile", action="store_true", help="also time torch.compile in 'train'")
    ap.add_argument("--full", default="", help="e.g. resnet18:bf16,densenet121:tf32 (10,000 networks each)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test of the script")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--table", nargs="+", default=None, help="print benchmarks/README.md's tables from these JSON files"
    )
    a = ap.parse_args(argv)
    if a.table:
        print(table(a.table))
        return
    if a.quick:
        a.seconds = min(a.seconds, 0.5)
    run = Run(a)
    archs = [s for s in a.archs.split(",") if s]
    print(json.dumps(run.out["machine"]), run.out.get("cuda"), flush=True)
    run.section("peak", bf16_peak, run)
    sections = {
        "accuracy": lambda: accuracy(run, archs),
        "secant": lambda: secant(run, archs),
        "gradient": lambda: gradient(run, archs),
        "fig1": lambda: fig1(run, archs),
        "train": lambda: train(run, archs),
        "full": lambda: full(run, a.full),
    }
    for name in a.sections.split(","):
        if name:
            run.section(name, sections[name])
    run.out["seconds"] = time.perf_counter() - run.t0
    run.save()
    print(
        json.dumps(
            {k: run.out.get(k) for k in ("secant", "gradient", "fig1", "train", "full", "errors")},
            indent=1,
            default=float,
        )
    )


if __name__ == "__main__":
    main()
