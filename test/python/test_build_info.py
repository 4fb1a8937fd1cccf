"""The torch-version check of ``import cohort`` (cohort/_torch_check.py), run for real.

A copy of the built package whose cohort/_build_info.py records another torch (or another C++
ABI) is imported in a fresh interpreter: the import must fail with an ImportError that names both
torches and says to reinstall, and must not have loaded the extension cohort._C (where a real
mismatch would end in an undefined symbol). One process, no launcher:
    PYTHONPATH=build/python python3 -m pytest test/python/test_build_info.py
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

IMPORT = """
import sys
try:
    import cohort.torch
    print("IMPORTED")
except ImportError as e:
    print("IMPORT ERROR:", e)
print("C LOADED:", "cohort._C" in sys.modules)
"""


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the cohort package under test, in a folder of its own."""
    spec = importlib.util.find_spec("cohort")
    assert spec is not None, "cohort is not importable: set PYTHONPATH=<build>/python"
    source = spec.submodule_search_locations[0]
    shutil.copytree(source, tmp_path / "cohort",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def record(root, name, value):
    """Rewrites one assignment of the copy's cohort/_build_info.py."""
    path = root / "cohort" / "_build_info.py"
    text, count = re.subn(rf"^{name} = .*$", f"{name} = {value}", path.read_text(), flags=re.M)
    assert count == 1, f"{name} is not recorded in {path}"
    path.write_text(text)


def import_in_subprocess(root):
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    return done.stdout + done.stderr


def test_the_same_torch_imports(package_copy):
    out = import_in_subprocess(package_copy)
    assert "IMPORTED" in out and "C LOADED: True" in out, out


def test_another_torch_version_is_refused_before_the_extension_loads(package_copy):
    record(package_copy, "TORCH_VERSION", '"0.0.1+other"')
    out = import_in_subprocess(package_copy)
    assert "IMPORT ERROR:" in out, out
    assert "built against torch 0.0.1+other" in out, out
    assert f"imports torch {torch.__version__}" in out, out
    assert "Reinstall cohort" in out, out
    assert "C LOADED: False" in out, out
    assert "undefined symbol" not in out, out


def test_another_cxx11_abi_is_refused(package_copy):
    built_abi = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    record(package_copy, "TORCH_CXX11_ABI", str(not built_abi))
    out = import_in_subprocess(package_copy)
    assert "IMPORT ERROR:" in out, out
    assert f"_GLIBCXX_USE_CXX11_ABI={int(not built_abi)}" in out, out
    assert f"_GLIBCXX_USE_CXX11_ABI={int(built_abi)}" in out, out
    assert "C LOADED: False" in out, out
