"""Small shared helpers: device resolution, seeds, provenance."""
from __future__ import annotations

import platform
import time

import numpy as np
import torch

import nadcore


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> cuda if available else cpu; anything else is checked and returned."""
    if isinstance(device, torch.device):
        return device
    device = str(device).strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    if not (device == "cpu" or device.startswith("cuda") or device == "mps"):
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'")
    return torch.device(device)


def derived_seed(*parts: int) -> int:
    """A 63-bit seed derived deterministically from integer parts (e.g. (seed, network_index))."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def generator(seed: int, *more: int, device="cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(derived_seed(seed, *more) if more else int(seed))
    return g


def provenance(**extra) -> dict:
    """Versions, device and host facts for the reproducibility block at the end of a chapter."""
    return {
        "nadcore": nadcore.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "threads": torch.get_num_threads(),
        **extra,
    }


class Timer:
    """``with Timer() as t: ...; t.seconds``"""

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        return False


def _fmt_value(v, quote: bool = False) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict) and {"name", "n_train", "n_test"} <= set(v):  # a CIFAR-10 description
        return f"{v['name']}: {v['n_train']:,} train / {v['n_test']:,} test images"
    return repr(v) if quote and isinstance(v, str) else str(v)


def reproducibility_block(profile: str, params: dict | None = None, *, seed=None, device=None,
                          data=None, started: float | None = None, wall_seconds: float | None = None,
                          settings: dict | None = None, extra: dict | None = None,
                          title: str = "Reproducibility") -> str:
    """The text block printed at the end of every chapter: profile, parameters, seed, device,
    data, versions and wall time, one item per line (print it).

    ``params``: the chapter's parameters as run (e.g. ``dict(model=model, seed=seed)``);
    ``device``: the device asked for (``"auto"`` is resolved and both are shown); ``data``: a
    string, a list of strings, or a CIFAR-10 ``description`` dict (name, n_train, n_test);
    ``started``: a ``time.perf_counter()`` taken at the top of the chapter (or ``wall_seconds``);
    ``settings``: the resolved profile settings (shown compactly); ``extra``: more name -> value
    lines (e.g. where the NADs came from).
    """
    info = provenance()
    rows: list[tuple[str, str]] = [("profile", str(profile))]
    if params:
        rows.append(("parameters", ", ".join(f"{k}={_fmt_value(v, True)}" for k, v in params.items())))
    if settings:
        rows.append(("settings", ", ".join(f"{k}={_fmt_value(v, True)}" for k, v in settings.items())))
    if seed is not None:
        rows.append(("seed", str(seed)))
    if device is not None:
        try:
            resolved = str(resolve_device(device))
        except ValueError as e:
            resolved = f"unavailable ({e})"
        shown = resolved if str(device) == resolved else f"{resolved} (asked: {device})"
        if resolved.startswith("cuda") and info["cuda"]:
            shown += f", {info['cuda']}"
        elif resolved == "cpu":
            shown += f", {info['threads']} torch thread(s)"
        rows.append(("device", shown))
    if data is not None:
        items = data if isinstance(data, (list, tuple)) else [data]
        rows.append(("data", "; ".join(_fmt_value(d) for d in items)))
    for k, v in (extra or {}).items():
        rows.append((str(k), _fmt_value(v)))
    rows.append(("versions", f"nadcore {info['nadcore']}, torch {info['torch']}, numpy {info['numpy']}, "
                             f"python {info['python']}, {platform.system()} {platform.machine()}"))
    if wall_seconds is None and started is not None:
        wall_seconds = time.perf_counter() - started
    if wall_seconds is not None:
        m, s = divmod(float(wall_seconds), 60)
        rows.append(("wall time", f"{wall_seconds:.1f} s" if m < 1 else f"{int(m)} min {s:.0f} s "
                                  f"({wall_seconds:.0f} s)"))
    width = max(len(k) for k, _ in rows)
    lines = [title, "-" * len(title)] + [f"{k:<{width}}  {v}" for k, v in rows]
    return "\n".join(lines)
