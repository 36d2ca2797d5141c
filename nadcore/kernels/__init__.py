"""Every speed-only path of nadcore, kept apart from the science.

Each function here computes a quantity that has a plain definition elsewhere in nadcore, and
tests/test_kernels.py checks it against that definition (equal up to float rounding, or bit for
bit where the definition is a random draw):

==========================  ===============================================  =====================================
module                      what it speeds up                                the definition it is checked against
==========================  ===============================================  =====================================
:mod:`.lenet`               LeNet's secant and gradient, many networks       :mod:`nadcore.nads.estimators`
:mod:`.resnet`              ResNet-18's secant (the first stages on crops)   :mod:`nadcore.nads.estimators`
:mod:`.stacked`             secant and gradient of stacked networks (vmap)   :mod:`nadcore.nads.estimators`
:mod:`.batched`             many LeNets / MLPs trained side by side          :func:`nadcore.train.batched_forward`
:mod:`.draw`                parameters of thousands of networks at once      :func:`nadcore.nets.init.draw_parameters`
:mod:`.cpu`                 oneDNN's matrix product, glibc's allocator       ``torch.nn.functional.linear``
:mod:`.native`              C kernels (AVX-512 where the CPU has it)         the torch paths above
==========================  ===============================================  =====================================

The C kernels are optional: without a C compiler with OpenMP, on another CPU, or with
``NADCORE_NATIVE=0``, every caller takes its torch path. Results then differ in float rounding
only, but rounding can move a number in a chapter, so every cached result, figure table and
scorecard row records the kernel path that made it (:func:`path`), and the cache keys on it.
"""

from __future__ import annotations

from nadcore.kernels import native

__all__ = ["path", "PATHS"]

#: "native": the C kernels are built and used; "torch": torch's paths only.
PATHS = ("native", "torch")


def path() -> str:
    """The kernel path of this process: "native" when the C kernels are built and enabled,
    "torch" otherwise (``NADCORE_NATIVE=0``, no compiler, a platform they do not build on)."""
    return "native" if native.available() else "torch"
