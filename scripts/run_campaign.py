"""Run a campaign: the paper's big networks, off-build, resumably, into a committed bundle.

    python scripts/run_campaign.py --campaign cpu [--budget 3600] [--workers 2] [--nice 19] [--background]
    python scripts/run_campaign.py --campaign paper --budget 540          # on a lent GPU
    python scripts/run_campaign.py --campaign cpu --dask tcp://scheduler:8786   # on a cluster
    python scripts/run_campaign.py --campaign cpu --dry-run              # the plan and its state

Campaigns are planned in nadcore/chapters/campaign_plans.py (``cpu``: the 2-core machine at the
widths the width study supports; ``paper``: full width on a GPU; ``tiny``: tests of the
machinery, never results). Every finished job is stored in the cache at once and the bundle
(``results/<campaign>/<chapter>/<figure>.csv`` and ``results/<campaign>/provenance.json``) is
rewritten after each, so the command can be killed at any moment and run again: it continues
where it stopped, even without the cache (the bundle's ledger holds the done jobs). See
nadcore/chapters/campaigns.py (how a plan is read) and nadcore/book/campaign.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _executor(a):
    """(executor, window, closer) from the arguments: in-process, a process pool, Dask or Slurm.
    ``closer(interrupted)``: after a kill or ^C (``interrupted``), a process pool stops at once
    (its jobs in flight are lost, as the bundle's ledger says), instead of finishing them."""
    if a.dask:
        from distributed import Client, LocalCluster

        if a.dask.startswith("local:"):
            saved = dict(os.environ)  # Dask's nanny sets OMP/MKL/..._NUM_THREADS=1 here for its workers

            def close(interrupted=False):
                client.close()
                cluster.close()
                os.environ.clear()
                os.environ.update(saved)

            cluster = LocalCluster(
                n_workers=int(a.dask[6:]), threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
            return client, int(a.dask[6:]), close
        client = Client(a.dask)
        n = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        return client, n, lambda interrupted=False: client.close()
    if a.slurm:
        import submitit

        ex = submitit.AutoExecutor(folder=a.slurm)
        ex.update_parameters(
            timeout_min=int(a.slurm_timeout), **({"slurm_partition": a.slurm_partition} if a.slurm_partition else {})
        )
        return ex, int(a.window or 64), lambda interrupted=False: None
    if a.workers > 1:
        from nadcore.book.runner import make_executor, stop_executor

        ex = make_executor(a.workers)
        return ex, a.workers, lambda interrupted=False: stop_executor(ex) if interrupted else ex.shutdown()
    return None, 1, lambda interrupted=False: None


def main(argv=None) -> int:
    from nadcore.book import campaign as cp
    from nadcore.chapters import campaigns
    from nadcore.chapters.linear_separability.runs import TRAINERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", required=True, help=f"one of {', '.join(campaigns.CAMPAIGNS)}")
    ap.add_argument("--figures", default=None, help="comma separated (default: every stage's)")
    ap.add_argument("--archs", default=None, help="comma separated registry names (default: every stage's)")
    ap.add_argument("--stages", default=None, help="comma separated stage numbers (default: all, in order)")
    ap.add_argument("--device", default=None, help="default: the campaign's (cpu or cuda)")
    ap.add_argument(
        "--trainer",
        default=None,
        choices=TRAINERS,
        help="replace the campaign's trainer (many: one run after another, float32)",
    )
    ap.add_argument(
        "--float32",
        action="store_true",
        help="train every stage in float32, the bf16 ones too (for a CPU without bf16 instructions)",
    )
    ap.add_argument(
        "--emulated-bf16",
        action="store_true",
        help="run bf16 stages even on a CPU without bf16 instructions (emulated: slower than float32)",
    )
    ap.add_argument("--cache", default=None, help="cache folder (default: $NADCORE_CACHE or .nadcache)")
    ap.add_argument("--out", default=None, help="bundle folder (default: results/<campaign>)")
    ap.add_argument("--budget", type=float, default=None, help="seconds; start no job that would end later")
    ap.add_argument(
        "--wait",
        action="store_true",
        help="if another campaign process is writing the same bundle, wait for it to end (default: stop with an error)",
    )
    ap.add_argument("--workers", type=int, default=1, help="one-thread worker processes (default 1: in-process)")
    ap.add_argument(
        "--nice", type=int, default=None, help="lower this process's priority by N (default: 19 on the CPU, 0 on a GPU)"
    )
    ap.add_argument(
        "--background",
        action="store_true",
        help="yield the CPU to other sessions too (Linux autogroups): a session of its own at the "
        "same nice; ^C no longer reaches it, stop it with kill",
    )
    ap.add_argument("--dask", default=None, help="a Dask scheduler address, or local:N for a local cluster")
    ap.add_argument("--slurm", default=None, help="a folder for submitit's Slurm logs (jobs go to Slurm)")
    ap.add_argument("--slurm-partition", default=None)
    ap.add_argument("--slurm-timeout", default=120, help="minutes per Slurm job")
    ap.add_argument("--window", type=int, default=None, help="jobs in flight on a cluster (default: its workers)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the bundle's state, run nothing")
    ap.add_argument(
        "--report",
        action="store_true",
        help="print the campaign's state and cost per task as a markdown table, run nothing",
    )
    ap.add_argument(
        "--rates",
        default=None,
        metavar="JSON",
        help="with --report: cost tasks without a done job from benchmarks/bench_big_networks.py "
        "--json JSON (one worker's hours per training run)",
    )
    a = ap.parse_args(argv)

    import torch

    from nadcore import runtime
    from nadcore.book.cache import Cache

    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None
    try:
        stages = [int(x) for x in split(a.stages)] if a.stages else None
        tasks, settings = campaigns.plan(
            a.campaign,
            figures=split(a.figures),
            archs=split(a.archs),
            stages=stages,
            device=a.device,
            trainer=a.trainer,
            float32=a.float32,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    device = a.device or settings["campaign"]["device"]
    if device.startswith("cuda") and not torch.cuda.is_available() and not (a.report or a.dry_run):
        print(
            f"error: campaign {a.campaign!r} runs on {device} but CUDA is not available here; "
            "the cpu campaign runs on this machine (--campaign cpu)",
            file=sys.stderr,
        )
        return 2
    bf16 = sorted({t.stage for t in tasks if t.meta.get("precision") == "bf16"})
    if bf16 and device == "cpu" and not runtime.native_bf16() and not a.emulated_bf16 and not (a.report or a.dry_run):
        print(
            f"error: stage(s) {', '.join(map(str, bf16))} train in bf16 autocast, and this CPU has no bf16 "
            f"instructions ({' or '.join(runtime.BF16_FLAGS)}): it would emulate bf16, slower than float32 "
            "(benchmarks/bench_big_networks.py --autocast bf16 measures it). Run them in float32 with "
            "--float32, or in emulated bf16 with --emulated-bf16.",
            file=sys.stderr,
        )
        return 2
    out = Path(a.out) if a.out else cp.results_root() / a.campaign
    if a.campaign == "tiny" and not a.out:
        print("error: the tiny campaign is a test of the machinery; give it --out outside results/", file=sys.stderr)
        return 2
    cache = Cache(a.cache or os.environ.get("NADCORE_CACHE") or ROOT / ".nadcache")
    if a.report:
        try:
            run_hours = (
                {r["network"]: r["worker_hours_per_run"] for r in json.loads(Path(a.rates).read_text())["rows"]}
                if a.rates
                else None
            )
        except (OSError, ValueError, KeyError) as e:
            print(
                f"error: --rates {a.rates}: not a JSON of benchmarks/bench_big_networks.py --json ({e})",
                file=sys.stderr,
            )
            return 2
        table = cp.report(tasks, cache, out, run_hours)
        cols = list(table.columns)
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for _, r in table.iterrows():
            print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r) + " |")
        workers = max(a.workers, 1)
        print(
            f"\nHours of one worker (the ledger's median job; `basis`), per figure and network "
            f"(wall hours with {workers} worker(s): divide by {workers}):\n"
        )
        per_fig = table.groupby(["figure", "network"], sort=False)[["hours so far", "hours left"]].sum(min_count=1)
        print(per_fig.round(1).to_markdown() if hasattr(per_fig, "to_markdown") else per_fig.round(1).to_string())
        total = table[["hours so far", "hours left"]].sum()
        unknown = int(table["hours left"].isna().sum())
        print(
            f"\n{int(table['jobs done'].sum())} of {int(table['jobs planned'].sum())} jobs done, "
            f"{total.iloc[0]:.1f} worker hours so far; the rest: {total.iloc[1]:.1f} worker hours, "
            f"{total.iloc[1] / workers:.1f} h of wall time with {workers} worker(s)"
            + (f" ({unknown} task(s) without a cost: no done job and no --rates row)" if unknown else "")
        )
        widths = campaigns.width_table(out)
        if len(widths):
            print(
                "\nThe width study: test accuracy on the diagnostic cells (seed mean; seeds in brackets), "
                "and the published accuracy of the full network\n"
            )
            print(widths.to_markdown() if hasattr(widths, "to_markdown") else widths.to_string())
        return 0
    prov = cp.load_provenance(out)
    for t in tasks:
        done = sum(cp.done_jobs(t, cache, prov, out))
        print(f"stage {t.stage:2d}: {t.label}: {len(t.jobs)} job(s), {t.runs} run(s), {done} job(s) done")
    if a.dry_run:
        return 0
    nice = a.nice if a.nice is not None else (19 if device == "cpu" else 0)
    if nice:
        print(f"priority: {cp.lower_priority(nice, session=a.background)}")
    elif a.background:
        print("priority: unchanged (nice 0): --background yields only with a nice above 0 (--nice N)")
    executor, window, close = _executor(a)
    # a kill (a time limit's SIGTERM) ends the session as ^C does: the ledger records it
    on_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed by SIGTERM"))
    interrupted = True
    try:
        prov = cp.run(
            tasks,
            settings,
            cache=cache,
            out=out,
            device=device,
            budget=a.budget,
            executor=executor,
            window=window,
            argv=sys.argv[1:] if argv is None else list(argv),
            wait=a.wait,
        )
        interrupted = False
    except (ValueError, cp.BundleBusy) as e:
        interrupted = False
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        close(interrupted)
        signal.signal(signal.SIGTERM, on_term)
    for fig, st in prov["figures"].items():
        print(f"{fig}: {st['runs_done']} runs in the bundle" + (" (complete)" if st.get("complete") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
