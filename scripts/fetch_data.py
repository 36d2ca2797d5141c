#!/usr/bin/env python
"""Find, or fetch, the data the book needs, and say which copy it uses.

    python scripts/fetch_data.py                  # what scripts/install.sh runs
    python scripts/fetch_data.py --strict         # exit 1 when something is still missing

* the authors' published NADs (LTS4/neural-anisotropy-directions, folder NADs/, at the pinned
  commit nadcore.nads.published.PUBLISHED_COMMIT), each file checked against its SHA-256;
* CIFAR-10: the project's genuine subset (5,170 train / 1,017 test images), made from the
  official archive that torchvision downloads (its MD5 checked), kept only with its SHA-256.

Each is first looked for where the chapters look (NADCORE_PUBLISHED_NADS, NADCORE_CIFAR_SUBSET,
NADCORE_DATA_ROOT, ../shared beside the repository, ~/.cache/nadcore); only what is not found is
downloaded, into ~/.cache/nadcore/ (or --dest). --nads-url and --cifar-url (or NADCORE_NADS_URL,
NADCORE_CIFAR_URL) name another server holding the same files, e.g. a mirror.
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nadcore.data.cifar import fetch_cifar10_subset, missing_cifar10  # noqa: E402
from nadcore.nads.published import fetch_published_nads, missing_published_nads  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, default=None, help="folder for what is downloaded (default ~/.cache/nadcore)")
    ap.add_argument("--nads-url", default=os.environ.get("NADCORE_NADS_URL"), help="base URL of the NADs' mirror")
    ap.add_argument("--cifar-url", default=os.environ.get("NADCORE_CIFAR_URL"), help="base URL of CIFAR-10's mirror")
    ap.add_argument("--no-cifar", action="store_true", help="leave CIFAR-10 alone")
    ap.add_argument("--strict", action="store_true", help="exit 1 when some data is still missing")
    a = ap.parse_args(argv)
    missing = []

    root, lacking = missing_published_nads()
    if not lacking:
        print(f"[data] published NADs: using {root}")
    else:
        dest = (a.dest / "lts4-nads") if a.dest else None
        try:
            got = fetch_published_nads(dest, a.nads_url)
            print(f"[data] published NADs: fetched into {got} (commit-pinned, SHA-256 checked)")
        except Exception as e:  # offline, or a damaged download: the build will stop and say so
            missing.append(f"published NADs: {e}")

    if not a.no_cifar:
        where, problem = missing_cifar10()
        if problem is None:
            print(f"[data] CIFAR-10: using {where}")
        else:
            dest = (a.dest / "cifar10-subset") if a.dest else None
            try:
                got = fetch_cifar10_subset(dest, a.cifar_url)
                print(f"[data] CIFAR-10: the project's subset made into {got} (MD5 and SHA-256 checked)")
            except Exception as e:
                missing.append(f"CIFAR-10: {problem}; fetching it failed: {e}")

    for m in missing:
        print(f"[data] MISSING {m}", file=sys.stderr)
    if missing:
        print(
            "[data] the chapters that need it will not run: fetch it where there is internet, or point "
            "NADCORE_PUBLISHED_NADS / NADCORE_CIFAR_SUBSET at a copy",
            file=sys.stderr,
        )
    return 1 if (missing and a.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
