"""nadcore.utils.reproducibility_block: the block printed at the end of each chapter."""
from __future__ import annotations

import time

import torch

import nadcore
from nadcore.utils import reproducibility_block


def test_block_lists_what_a_reader_needs_to_rerun():
    text = reproducibility_block(
        "smoke", dict(model="lenet", seed=3, secant_networks=None), seed=3, device="auto",
        data={"name": "CIFAR-10 subset", "n_train": 5170, "n_test": 1017},
        started=time.perf_counter() - 75.0, settings={"epochs": 2}, extra={"NADs": "published"})
    lines = text.splitlines()
    assert lines[0] == "Reproducibility" and set(lines[1]) == {"-"}
    rows = {l.split()[0]: l for l in lines[2:]}
    assert "smoke" in rows["profile"]
    assert "model='lenet', seed=3, secant_networks=None" in rows["parameters"]
    assert "epochs=2" in rows["settings"] and rows["seed"].split()[-1] == "3"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert rows["device"].split()[1] == expected and "(asked: auto)" in rows["device"]
    assert "CIFAR-10 subset: 5,170 train / 1,017 test images" in rows["data"]
    assert rows["NADs"].split()[-1] == "published"
    assert f"nadcore {nadcore.__version__}" in rows["versions"] and f"torch {torch.__version__}" in rows["versions"]
    assert "1 min 15 s" in rows["wall"]


def test_block_minimal_and_explicit_wall_time():
    text = reproducibility_block("cpu", wall_seconds=12.34, device="cpu", data=["a", "b"])
    assert "wall time  12.3 s" in text or "12.3 s" in text
    assert "(asked" not in text and "data" in text and "a; b" in text
    assert "parameters" not in text
