"""nadcore installs as a library: the wheel built from this checkout, installed into a fresh
virtual environment (with the machine's packages for torch and the rest, so nothing is
downloaded), gives the `nadcore` command and README's five lines of Python, from a folder outside
the repository, and declares its dependencies and extras."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the installed copy's environment: a PYTHONPATH (a checkout on it) would shadow the wheel
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy of what the wheel is built from: setuptools writes build/ beside it
    shutil.copytree(ROOT / "nadcore", src / "nadcore", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = (tmp / "dist").glob("nadcore-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp / "venv")], check=True, timeout=300)
    py = tmp / "venv" / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
        env=ENV,
    )
    work = tmp / "elsewhere"
    work.mkdir()
    return py, work


def test_the_wheel_installs_nadcore_with_its_data_and_declares_its_dependencies(venv):
    py, work = venv
    code = textwrap.dedent("""
        import importlib.metadata as md, json, nadcore
        from nadcore.nads.published import load_published_fig1, load_published_fig6
        files = [str(f) for f in md.files("nadcore")]
        print(json.dumps({"file": nadcore.__file__, "requires": md.requires("nadcore"),
                          "fig1": len(load_published_fig1()), "fig6": len(load_published_fig6()),
                          "static": any(f.endswith("book/static/nad_explorer.js") for f in files),
                          "kernels": any(f.endswith("kernels/native/convpool.c") for f in files)}))
    """)
    out = json.loads(
        subprocess.run(
            [str(py), "-c", code], cwd=work, check=True, capture_output=True, text=True, timeout=300, env=ENV
        ).stdout
    )
    assert "venv" in out["file"] and str(ROOT) not in out["file"]  # the installed copy, not the checkout
    assert out["fig1"] == 5 * 256 and out["fig6"] == 1023 and out["static"] and out["kernels"]
    reqs = " ".join(out["requires"])
    for dep in ("torch", "numpy", "scipy", "pandas", "matplotlib", "threadpoolctl"):
        assert dep in reqs, dep
    for extra in ("hub", "book", "cluster", "test"):
        assert f'extra == "{extra}"' in reqs, extra


def test_the_nadcore_command_and_the_five_lines_of_python(venv):
    py, work = venv
    cli = py.parent / "nadcore"
    subprocess.run(
        [
            str(cli),
            "nads",
            "--model",
            "lenet",
            "--networks",
            "64",
            "--method",
            "gradient",
            "--device",
            "cpu",
            "--out",
            str(work / "lenet.npz"),
        ],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=600,
        env=ENV,
    )
    assert (work / "lenet.npz").is_file()
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split("## In one minute", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert len([line for line in snippet.strip().splitlines() if line.strip()]) <= 5
    out = subprocess.run(
        [str(py), "-c", snippet], cwd=work, check=True, capture_output=True, text=True, timeout=600, env=ENV
    ).stdout
    assert out.strip(), "the snippet prints the NADs' spectrum or overlap"
