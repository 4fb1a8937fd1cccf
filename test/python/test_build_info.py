"""The extension links no libtorch, and ``import cohort`` refuses a torch it does not support.

The extension cohort._C takes tensors as (data pointer, shape, dtype, device) and gives results
back through DLPack, so one build serves every torch from cohort/_torch_check.SUPPORTED_FROM on:
its shared objects need no libtorch, libc10 or libtorch_python (read by the system's ldd), and an
older torch is refused by an ImportError naming it, before the extension is loaded. One process,
no launcher:
    PYTHONPATH=build/python python3 -m pytest test/python/test_build_info.py
"""

import glob
import importlib.util
import os
import subprocess
import sys

# Imports cohort.torch, the torch module's version first set to argv[1] when one is given.
IMPORT = """
import sys
import torch
if len(sys.argv) > 1:
    torch.__version__ = sys.argv[1]
try:
    import cohort.torch
    print("IMPORTED")
except ImportError as e:
    print("IMPORT ERROR:", e)
print("C LOADED:", "cohort._C" in sys.modules)
"""


def package_dir():
    spec = importlib.util.find_spec("cohort")
    assert spec is not None, "cohort is not importable: set PYTHONPATH=<build>/python"
    return spec.submodule_search_locations[0]


def import_in_subprocess(*version):
    done = subprocess.run([sys.executable, "-c", IMPORT, *version], capture_output=True,
                          text=True, timeout=60, check=False)
    return done.stdout + done.stderr


def needed_libraries(path):
    """What the loader resolves for ``path``: ldd's lines."""
    done = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_the_extension_and_its_libraries_link_no_torch():
    extensions = glob.glob(os.path.join(package_dir(), "_C*.so"))
    assert len(extensions) == 1, extensions
    libraries = needed_libraries(extensions[0])
    assert "libcohort" in libraries, libraries
    for torch_library in ("libtorch", "libc10", "libtorch_python"):
        assert torch_library not in libraries, libraries


def test_this_torch_imports():
    out = import_in_subprocess()
    assert "IMPORTED" in out and "C LOADED: True" in out, out


def test_every_later_release_is_supported():
    for version in ("1.13.0a0", "2.0.1", "2.15.0+cu132", "3.0.0"):
        out = import_in_subprocess(version)
        assert "IMPORTED" in out, (version, out)


def test_an_older_torch_is_refused_before_the_extension_loads():
    out = import_in_subprocess("1.12.1+cpu")
    assert "IMPORT ERROR:" in out, out
    assert "supports torch 1.13 and every later release" in out, out
    assert "imports torch 1.12.1+cpu" in out, out
    assert "older than 1.13" in out, out
    assert "C LOADED: False" in out, out


def test_an_unreadable_version_is_refused():
    out = import_in_subprocess("nightly")
    assert "IMPORT ERROR:" in out and "'nightly' is not one cohort can read" in out, out
    assert "C LOADED: False" in out, out

