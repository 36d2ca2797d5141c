"""NAD estimates as jobs of the common runner: computed once, cached, shared by every chapter.

A NAD estimate is identified by the model (:func:`nadcore.nets.spec_key`), the input shape, the
number of networks, the seed, the estimator and its step, the number of evaluation points and
the arithmetic (``precision``, when not float32). The running estimates recorded along the way
(``checkpoints``) are not part of the key: an estimate has the same bits with or without them
(:mod:`nadcore.nads.covariance`), so a cached entry serves any request whose checkpoints it
holds, and one that lacks them is computed again with them and replaces the entry.
"""

from __future__ import annotations

from nadcore.book.cache import Cache
from nadcore.book.runner import Job, run_jobs
from nadcore.nads.covariance import NADResult
from nadcore.nads.sampling import compute_nads
from nadcore.nets import spec_key

__all__ = ["nad_config", "nad_job", "cached_nads"]


def nad_config(
    model: str,
    method: str,
    num_networks: int,
    seed: int,
    input_shape=(1, 32, 32),
    step: float = 100.0,
    points: int = 1,
    precision: str = "float32",
) -> dict:
    """The cache key material of a NAD estimate (see the module docstring)."""
    config = {
        **spec_key(model),
        "input_shape": [int(s) for s in input_shape],
        "networks": int(num_networks),
        "seed": int(seed),
        "method": method,
        "step": float(step) if method == "secant" else None,
        "points": int(points),
    }
    if precision != "float32":
        config["precision"] = precision
    return config


def nad_job(config: dict, device="auto", checkpoints=(), progress: bool = False):
    """The job function: :func:`nadcore.nads.compute_nads` of ``config``; returns its arrays and
    meta."""
    r = compute_nads(
        config["model"],
        tuple(config["input_shape"]),
        config["networks"],
        config["seed"],
        config["method"],
        config["step"] or 100.0,
        device,
        checkpoints=list(checkpoints),
        progress=progress,
        points=config["points"],
        precision=config.get("precision", "float32"),
    )
    return r.to_arrays(), r.meta


def _holds_checkpoints(job: Job, arrays: dict, meta: dict) -> bool:
    wanted = set(job.data.get("checkpoints", ()))
    return wanted <= {int(c) for c in arrays.get("checkpoint_networks", [])}


def cached_nads(
    model="lenet",
    method: str = "secant",
    num_networks: int = 1000,
    seed: int = 0,
    input_shape=(1, 32, 32),
    step: float = 100.0,
    cache: Cache | None = None,
    device="auto",
    checkpoints=None,
    progress: bool = False,
    points: int = 1,
    precision: str = "float32",
) -> NADResult:
    """:func:`nadcore.nads.compute_nads` as a cached job (see the module docstring). Factories
    given as callables are computed, not cached."""
    wanted = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks})
    if not isinstance(model, str):
        return compute_nads(
            model,
            input_shape,
            num_networks,
            seed,
            method,
            step,
            device,
            checkpoints=wanted,
            progress=progress,
            points=points,
            precision=precision,
        )
    job = Job(
        nad_config(model, method, num_networks, seed, input_shape, step, points, precision),
        {"device": str(device), "checkpoints": wanted, "progress": progress},
    )
    ((arrays, meta),) = run_jobs(
        [job], nad_job, cache=cache, name="nads", accept=_holds_checkpoints, thread_invariant=True
    )
    arrays = dict(arrays)
    return NADResult(arrays.pop("eigenvalues"), arrays.pop("nads"), meta, arrays)
