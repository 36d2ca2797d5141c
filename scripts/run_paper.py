"""Run the paper profile's jobs on a GPU, resumably, and export the result bundles.

    python scripts/run_paper.py --figures fig1 --archs resnet18 --device cuda \
        [--cache DIR] [--out results/paper] [--seeds N] [--budget 540] [--tiny]

Figures: fig1, fig2, fig3, fig6 (chapter 3); fig7, fig8 and the follow-up's panels are not wired
yet. Every finished job is stored in the cache at once and the bundle
(``<out>/<chapter>/<figure>.csv`` and ``<out>/provenance.json``) is rewritten after each job, so
the command can be killed at any point and restarted: it loses at most the job in flight.
``--budget S``: do not start a job that would end after S seconds (a lease's 10-minute commands).
``--tiny``: tiny networks, a few cells and samples, for CPU tests of the machinery; never
results, and refused for a folder that holds a paper-scale bundle. See nadcore/book/paper_runs.py.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from nadcore.book import paper_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", required=True, help=f"comma separated: {', '.join(paper_runs.FIGURES)}")
    ap.add_argument("--archs", default=None, help="comma separated registry names (default: each figure's "
                    "paper-profile architectures, the ones the cpu build cannot train first)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (for --tiny)")
    ap.add_argument("--cache", default=None, help="cache folder (default: $NADCORE_CACHE or .nadcache)")
    ap.add_argument("--out", default=str(ROOT / "results" / "paper"), help="bundle folder (default results/paper)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per run (default: the profile's)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0, the book's)")
    ap.add_argument("--budget", type=float, default=None, help="seconds; start no job that would end later")
    ap.add_argument("--tiny", action="store_true", help="tiny networks and sizes: a CPU test of the machinery")
    ap.add_argument("--cells", type=int, default=None, help="only the first N distinct cells (tests)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the bundle's state, run nothing")
    a = ap.parse_args(argv)

    import torch

    from nadcore.experiments.cache import Cache

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: --device cuda but CUDA is not available on this machine (use a GPU, or "
              "--device cpu --tiny to test the machinery)", file=sys.stderr)
        return 2
    if a.device == "cpu" and not a.tiny and not a.dry_run:
        print("error: paper-scale runs on the CPU would take weeks; use --device cuda (or --tiny)", file=sys.stderr)
        return 2
    figures = [f.strip() for f in a.figures.split(",") if f.strip()]
    archs = [x.strip() for x in a.archs.split(",") if x.strip()] if a.archs else None
    cache = Cache(a.cache or os.environ.get("NADCORE_CACHE") or ROOT / ".nadcache")
    try:
        tasks, settings = paper_runs.plan(figures, archs, seeds=a.seeds, seed=a.seed, tiny=a.tiny,
                                          device=a.device, cache=cache, cells=a.cells)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for t in tasks:
        print(f"plan: {t.figure} {t.arch} {t.name}: {t.planned_jobs} job(s), {t.planned_runs} run(s)")
    if a.dry_run:
        return 0
    try:
        prov = paper_runs.run(tasks, settings, cache=cache, out=a.out, device=a.device, budget=a.budget,
                              tiny=a.tiny, argv=sys.argv[1:] if argv is None else list(argv))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for fig, st in prov["figures"].items():
        for arch, s in st.get("archs", {}).items():
            print(f"{fig} {arch}: {s['runs_done']}/{s['runs_planned']} runs, {s['jobs_done']}/{s['jobs_planned']} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
