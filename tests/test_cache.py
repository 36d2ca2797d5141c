import json

import numpy as np
import pytest

from nadcore.cache import Cache, cache_key


def test_roundtrip_and_key_depends_on_everything(tmp_path):
    c = Cache(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"a": np.arange(5.0)}, {"note": "x"}

    a1, m1 = c.get_or_compute("f", {"n": 1, "s": [1, 2]}, compute)
    a2, m2 = c.get_or_compute("f", {"s": [1, 2], "n": 1}, compute)  # same config, other key order
    assert len(calls) == 1 and np.array_equal(a1["a"], a2["a"]) and m2 == {"note": "x"}
    assert cache_key("f", {"n": 1})[0] != cache_key("f", {"n": 2})[0]
    assert cache_key("f", {"n": 1})[0] != cache_key("g", {"n": 1})[0]
    assert cache_key("f", {"n": 1})[0] != cache_key("f", {"n": 1}, version="9.9")[0]


def test_interrupted_write_leaves_no_entry(tmp_path):
    c = Cache(tmp_path)
    with pytest.raises(TypeError, match="dtype object"):
        c.save("f", {"n": 1}, {"bad": np.array([{"x": 1}], dtype=object)})
    assert c.load("f", {"n": 1}) is None
    assert not any(p.name.startswith(".") for p in (tmp_path / "f").iterdir())


def test_entries_are_plain_npz_and_json_and_damage_is_detected(tmp_path):
    c = Cache(tmp_path)
    d = c.save("f", {"n": 1}, {"a": np.ones(3)}, {"k": 1})
    with np.load(d / "arrays.npz", allow_pickle=False) as z:
        assert np.array_equal(z["a"], np.ones(3))
    meta = json.loads((d / "meta.json").read_text())
    assert meta["key_material"]["config"] == {"n": 1} and len(meta["sha256"]) == 64
    np.savez(d / "arrays.npz", a=np.zeros(3))  # silently different numbers
    with pytest.warns(UserWarning, match="damaged"):
        assert c.load("f", {"n": 1}) is None
    # a meta.json whose key material belongs to another request is refused too
    c.save("f", {"n": 2}, {"a": np.ones(3)})
    other = c.path("f", {"n": 2})
    (d / "meta.json").write_text((other / "meta.json").read_text())
    np.savez(d / "arrays.npz", a=np.ones(3))
    with pytest.warns(UserWarning, match="damaged"):
        assert c.load("f", {"n": 1}) is None


def test_config_must_be_json_like(tmp_path):
    with pytest.raises(TypeError, match="JSON-like"):
        Cache(tmp_path).save("f", {"fn": object()}, {"a": np.ones(1)})
