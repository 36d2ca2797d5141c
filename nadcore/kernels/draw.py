"""Drawing the parameters of thousands of networks at once, bit for bit as one at a time.

:func:`nadcore.nets.init.draw_parameters` is the definition: network ``s`` draws from
``numpy.random.default_rng(s)``. Drawing 10,000 networks that way spends most of its time in
Python (a ``SeedSequence`` hash costs about 8 us per network) and in page faults, so NAD
sampling uses the functions here, which give the same bits (tests/test_kernels.py):

* :func:`derived_seeds` / :func:`seed_sequence_words`: numpy's ``SeedSequence`` hash written as
  whole-column uint32 operations, for all networks at once;
* :func:`uniform_f32`: numpy's float32 uniform draw from 64-bit raw outputs, vectorised;
* :func:`draw_parameters`: all of it, into reusable (optionally page-locked) buffers
  (:func:`parameter_buffers`), several threads filling disjoint rows, and the uniform part from
  :func:`nadcore.kernels.native.pcg64_uniform` (16 PCG64 streams side by side in AVX-512 lanes)
  where the native kernels are built.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from numpy.random.bit_generator import ISeedSequence

from nadcore.kernels import native as _native
from nadcore.nets.init import parameter_layout
from nadcore.runtime import derived_seed

__all__ = ["seed_sequence_words", "derived_seeds", "uniform_f32", "parameter_buffers", "draw_parameters"]


def uint32_words(n: int) -> list[int]:
    """numpy's split of a non-negative int into little-endian 32-bit words (0 -> [0])."""
    words = [] if n else [0]
    while n > 0:
        words.append(n & 0xFFFFFFFF)
        n >>= 32
    return words


def seed_sequence_words(entropy: np.ndarray, n_words: int) -> np.ndarray:
    """``np.random.SeedSequence(row).generate_state(n_words, np.uint32)`` for every row of
    ``entropy`` (B, k) uint32 at once: numpy's hash of the entropy into a pool of four words and
    its output hash, written as whole-column uint32 operations. A SeedSequence costs about 8 us of
    Python (holding the GIL) per network otherwise; thousands of networks are seeded per second.
    tests/test_kernels.py checks it against numpy word for word."""
    e = np.asarray(entropy, dtype=np.uint32)
    B, k = e.shape
    u = np.uint32
    h = [u(0x43B0D7E5)]

    def hashmix(v):
        v = v ^ h[0]
        h[0] = u(h[0] * u(0x931E8875))
        v = v * h[0]
        return v ^ (v >> u(16))

    def mix(x, y):
        r = u(0xCA01F9DD) * x - u(0x4973F715) * y
        return r ^ (r >> u(16))

    out = np.empty((B, n_words), np.uint32)
    with np.errstate(over="ignore"):
        pool = [hashmix(e[:, i] if i < k else np.zeros(B, np.uint32)) for i in range(4)]
        for src in range(4):
            for dst in range(4):
                if src != dst:
                    pool[dst] = mix(pool[dst], hashmix(pool[src]))
        for src in range(4, k):
            for dst in range(4):
                pool[dst] = mix(pool[dst], hashmix(e[:, src]))
        hb = u(0x8B51F9DD)
        for i in range(n_words):
            v = pool[i % 4] ^ hb
            hb = u(hb * u(0x58F38DED))
            v = v * hb
            out[:, i] = v ^ (v >> u(16))
    return out


def derived_seeds(seed: int, indices) -> list[int]:
    """``[derived_seed(seed, n) for n in indices]``, hashed for all indices at once (indices below
    2**32; others take :func:`derived_seed` one by one)."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= 1 << 32 or int(seed) < 0:
        return [derived_seed(seed, int(n)) for n in idx]
    head = np.array(uint32_words(int(seed)), dtype=np.uint32)
    entropy = np.concatenate([np.broadcast_to(head, (idx.size, head.size)), idx.astype(np.uint32)[:, None]], 1)
    w = seed_sequence_words(entropy, 2).astype(np.uint64)
    return ((w[:, 0] | (w[:, 1] << np.uint64(32))) >> np.uint64(1)).tolist()


def uniform_f32(rng: np.random.Generator, out: np.ndarray, scale: np.ndarray | None = None) -> None:
    """``rng.random(len(out), dtype=np.float32, out=out)`` [then ``out *= scale`` in float32], bit
    for bit and faster.

    numpy's PCG64 makes each float32 from the next 32 random bits (the low half of a 64-bit
    output, then its high half) as ``(bits >> 8) * 2**-24``; here the 64-bit outputs come in one
    ``random_raw`` call, the conversion is vectorised, and ``2**-24`` joins ``scale`` (a power of
    two: the product is the same number, rounded once). An odd count leaves the last output's
    high half buffered in the generator for its next 32-bit draw, as numpy does. A generator
    that holds such a half already, or a big-endian machine, gets numpy's own method.
    tests/test_kernels.py checks the equality, including the generator's state afterwards."""
    _uniform_into(rng, out, scale, np.float32(_TWO_M24) if scale is None else scale * np.float32(_TWO_M24))


_TWO_M24 = 2.0**-24


def _uniform_into(rng, out, scale, scale_m24, fresh: bool = False, keep_state: bool = True) -> None:
    """:func:`uniform_f32` with ``scale * 2**-24`` computed by the caller (once for many rows).
    ``fresh``: ``rng`` is new (holds no buffered half); ``keep_state=False``: nothing is drawn
    from ``rng`` afterwards, so the half an odd count leaves need not be stored."""
    n = len(out)
    bg = rng.bit_generator
    if sys.byteorder != "little" or not isinstance(bg, np.random.PCG64) or (not fresh and bg.state["has_uint32"]):
        rng.random(n, dtype=np.float32, out=out)
        if scale is not None:
            np.multiply(out, scale, out=out)
        return
    bits = bg.random_raw((n + 1) // 2).view(np.uint32)
    if n % 2 and keep_state:  # numpy keeps the unused high half for the generator's next draw
        state = bg.state
        state["has_uint32"], state["uinteger"] = 1, int(bits[n])
        bg.state = state
    bits = bits[:n]
    np.right_shift(bits, 8, out=bits)
    out[...] = bits
    np.multiply(out, scale_m24, out=out)


class _Words(ISeedSequence):
    """A seed sequence whose state words are already hashed (by :func:`_pcg64_seed_words`)."""

    def __init__(self, words: np.ndarray):
        self.words = words

    def generate_state(self, n_words, dtype=np.uint32):
        return self.words


def _pcg64_seed_words(seeds) -> np.ndarray | None:
    """The words ``np.random.default_rng(s)`` seeds its PCG64 with, for every seed at once:
    ``SeedSequence(s).generate_state(4, np.uint64)`` (B, 4). None where some seed is negative or
    needs more than four 32-bit words (numpy then does it, one by one)."""
    ints = [int(s) for s in seeds]
    if not ints or min(ints) < 0 or max(ints) >= 1 << 128:
        return None
    if max(ints) < 1 << 64:
        s64 = np.array(ints, dtype=np.uint64)
        entropy = np.zeros((len(ints), 4), np.uint32)
        entropy[:, 0], entropy[:, 1] = s64 & np.uint64(0xFFFFFFFF), s64 >> np.uint64(32)
    else:
        entropy = np.array([(uint32_words(s) + [0, 0, 0])[:4] for s in ints], np.uint32)
    w = seed_sequence_words(entropy, 8).astype(np.uint64)  # zero words hash as numpy's padding
    return w[:, 0::2] | (w[:, 1::2] << np.uint64(32))


def parameter_buffers(plan, rows: int, pinned: bool = False) -> dict[str, np.ndarray]:
    """Buffers that :func:`draw_parameters` can fill again and again (``buffers=``) for up to
    ``rows`` networks at a time: drawing thousands of networks then writes into memory it has
    already touched instead of fresh pages for every block (the page faults of fresh buffers
    made the draw three times slower). ``pinned``: page-locked memory, from which copies to a
    GPU run at full speed and asynchronously."""
    sizes = parameter_layout(plan).sizes
    if pinned:
        return {k: torch.empty((rows, n), dtype=torch.float32, pin_memory=True).numpy() for k, n in sizes.items()}
    return {k: np.empty((rows, n), dtype=np.float32) for k, n in sizes.items()}


def draw_parameters(plan, seeds, threads: int = 1, buffers: dict | None = None, device=None) -> dict[str, torch.Tensor]:
    """:func:`nadcore.nets.init.draw_parameters`, the same numbers, fast: ``threads`` threads fill
    disjoint rows (numpy releases the GIL); the result is views into one buffer per kind: new
    ones, or the first rows of ``buffers`` (from :func:`parameter_buffers`; the previous draw's
    views then see the new numbers). With a ``device``, the two buffers travel there whole (two
    copies instead of one per parameter; asynchronous from pinned ``buffers``: synchronise before
    refilling them) and the views are views of the copies. Where it is built,
    :func:`nadcore.kernels.native.pcg64_uniform` draws the uniform part."""
    lay = parameter_layout(plan)
    sizes = lay.sizes
    B = len(seeds)
    if buffers is not None and all(len(buffers[k]) >= B and buffers[k].shape[1] == sizes[k] for k in sizes):
        U, N = buffers["uniform"][:B], buffers["normal"][:B]
    else:
        U = np.empty((B, sizes["uniform"]), dtype=np.float32)
        N = np.empty((B, sizes["normal"]), dtype=np.float32)
    u_mul_m24 = lay.u_mul * np.float32(_TWO_M24)  # exact: a power of two
    words = _pcg64_seed_words(seeds)

    # the native kernel draws the uniform part of every row at once (the same numbers, many
    # generators side by side) where a normal part, if any, can continue from a whole number of
    # 64-bit outputs; the rows then only need their normal part
    native = words is not None and B > 0 and (N.shape[1] == 0 or U.shape[1] % 2 == 0) and _native.available()
    if native:
        _native.pcg64_uniform(words, u_mul_m24, lay.u_sub, U, threads)

    def fill(rows):
        for row in rows:
            rng = (
                np.random.default_rng(int(seeds[row]))
                if words is None
                else np.random.Generator(np.random.PCG64(_Words(words[row])))
            )
            if native:  # continue where the native uniform part left this generator
                rng.bit_generator.advance(U.shape[1] // 2)
            else:
                u = U[row]
                _uniform_into(rng, u, lay.u_mul, u_mul_m24, fresh=True, keep_state=N.shape[1] > 0)
                np.subtract(u, lay.u_sub, out=u)
            if N.shape[1]:
                z = N[row]
                rng.standard_normal(N.shape[1], dtype=np.float32, out=z)
                np.multiply(z, lay.n_mul, out=z)

    rows_left = not native or N.shape[1] > 0
    parts = [p for p in np.array_split(np.arange(B), max(1, min(int(threads), B))) if len(p)] if rows_left else []
    if len(parts) > 1:
        with ThreadPoolExecutor(len(parts)) as ex:
            list(ex.map(fill, parts))
    elif parts:
        fill(parts[0])
    Ut, Nt = torch.from_numpy(U), torch.from_numpy(N)
    if device is not None:
        Ut, Nt = Ut.to(device, non_blocking=True), Nt.to(device, non_blocking=True)
    return lay.unpack(Ut, Nt)
