"""What scripts/gpu/check.sh builds and how it judges the tests.
  gpu_targets.py tests BUILD ROOT   the build targets the tests labelled `gpu` run, one a line:
      every program of their commands that the build makes, cohort_python where their
      environment points PYTHONPATH into the build, and cohort_gpu_tests (test/CMakeLists.txt),
      which GPU test programs found by catch_discover_tests join (ctest lists those only built)
      Targets this build does not have are named on stderr and left out.
  gpu_targets.py bench BUILD ROOT   the targets bench/gpu/*.sh name on a line `# needs: a b`;
      `all` when a script names none
  gpu_targets.py verdict BUILD CONSOLE_LOG MODE   exit 1 when a gpu test failed or timed out,
      or (MODE rehearse, no GPU) when one did anything but skip, except the tests also labelled
      `gpu_host`: they check something without a GPU too (the error paths, the libraries)"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import ctest_log


def ninja(build):
    cache = Path(build, "CMakeCache.txt").read_text()
    m = re.search(r"^CMAKE_MAKE_PROGRAM:\w+=(.*)$", cache, re.M)
    return m.group(1) if m else "ninja"


def ninja_knows(build, target):
    return subprocess.run([ninja(build), "-C", build, "-t", "query", target],
                          capture_output=True).returncode == 0


def add_test_commands(build):
    """{test: [args]} from the CTestTestfile.cmake files: ctest's own listing leaves out the
    command of a test whose program is not built yet."""
    commands = {}
    for testfile in Path(build).rglob("CTestTestfile.cmake"):
        for line in testfile.read_text(errors="replace").splitlines():
            m = re.match(r"add_test\(\[(=*)\[(.+?)\]\1\] (.*)\)$", line)
            if m:
                commands[m.group(2)] = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3))
    return commands


def test_targets(build, root):
    listing = subprocess.run(["ctest", "--test-dir", build, "-L", "gpu", "-N",
                              "--show-only=json-v1"], capture_output=True, text=True, check=True)
    commands = add_test_commands(build)
    wanted = []
    for test in json.loads(listing.stdout).get("tests", []):
        for arg in test.get("command") or commands.get(test["name"], []):
            if arg.startswith(build + "/"):
                wanted.append(os.path.relpath(arg, build))
            elif arg.endswith("_NOT_BUILT"):
                wanted.append(arg[: -len("_NOT_BUILT")])
        for prop in test.get("properties", []):
            if prop.get("name") == "ENVIRONMENT" and any(
                    f"{build}/python" in v for v in prop.get("value", [])):
                wanted.append("cohort_python")
    wanted.append("cohort_gpu_tests")
    seen = []
    for t in wanted:
        if t not in seen and ninja_knows(build, t):
            seen.append(t)
    return seen


def bench_targets(root):
    wanted = []
    for script in sorted(Path(root, "bench", "gpu").glob("*.sh")):
        needs = re.search(r"^# needs:(.*)$", script.read_text(), re.M)
        if not needs:
            return ["all"]
        wanted += [t for t in needs.group(1).split() if t not in wanted]
    return wanted


def host_tests(build):
    """The gpu tests that pass without a GPU too: labelled gpu_host as well."""
    listing = subprocess.run(["ctest", "--test-dir", build, "-L", "gpu_host", "-N",
                              "--show-only=json-v1"], capture_output=True, text=True, check=True)
    return {test["name"] for test in json.loads(listing.stdout).get("tests", [])}


def verdict(build, console_log, mode):
    bad, anywhere = [], host_tests(build)
    for name, status, _ in ctest_log.results(console_log):
        if status == "Skipped" or (status == "Passed" and (mode != "rehearse" or name in anywhere)):
            continue
        bad.append(f"{name}: {status}")
    for line in bad:
        print(("without a GPU, not skipped: " if mode == "rehearse" else "") + line)
    return 1 if bad else 0


def main(argv):
    what = argv[1]
    if what in ("tests", "bench"):
        build = os.path.abspath(argv[2])
        targets = test_targets(build, argv[3]) if what == "tests" else bench_targets(argv[3])
        for t in [t for t in targets if t != "all" and not ninja_knows(build, t)]:
            print(f"gpu_targets: this build has no target {t}", file=sys.stderr)
        for t in [t for t in targets if t == "all" or ninja_knows(build, t)]:
            print(t)
    elif what == "verdict":
        return verdict(os.path.abspath(argv[2]), argv[3], argv[4])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
