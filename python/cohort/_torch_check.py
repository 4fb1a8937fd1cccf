"""Refuses a torch other than the one Cohort was built against, before ``cohort._C`` is loaded.

The extension links libtorch's C++ API, which changes between releases: loaded into another torch it
fails with an undefined symbol, or worse, loads and misbehaves. This check turns that into an
ImportError that names both versions and says how to rebuild.
"""

from cohort import _build_info


def mismatch(built_version, built_abi, found_version, found_abi):
    """The reason the torch found cannot run this build, or None when it can."""
    if built_version != found_version:
        return f"torch {found_version}"
    if bool(built_abi) != bool(found_abi):
        return f"torch {found_version} with _GLIBCXX_USE_CXX11_ABI={int(bool(found_abi))}"
    return None


def check(torch):
    """Raises ImportError unless ``torch`` (the imported module) is the torch of this build."""
    found_abi = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None)
    reason = mismatch(_build_info.TORCH_VERSION, _build_info.TORCH_CXX11_ABI, torch.__version__,
                      found_abi)
    if reason is None:
        return
    built = (f"torch {_build_info.TORCH_VERSION} with "
             f"_GLIBCXX_USE_CXX11_ABI={int(_build_info.TORCH_CXX11_ABI)}")
    raise ImportError(
        f"cohort {_build_info.COHORT_VERSION} was built against {built}, but this environment "
        f"imports {reason} ({torch.__file__}). Reinstall cohort into this environment so that it "
        "is built against this torch: pip install --force-reinstall --no-cache-dir <cohort source> "
        "(or rebuild it with CMake; docs/pytorch.md).")
