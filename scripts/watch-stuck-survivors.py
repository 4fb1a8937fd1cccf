#!/usr/bin/env python3
# Catches an elastic worker that logged a failure and then does not check in for the next round:
# reads the elastic tests' logs (/tmp/tmp.*/err, written by test/elastic_job/elastic_test_lib.sh and
# the remote tests) every 0.2 s, and when a worker's "cohort ERROR" line is not followed by its
# "checked in as entry" line within 2 s, dumps the threads of every trainer process with gdb into
# OUT_DIR/stacks-<time>-<n>.txt, with the log's tail. The check-in lines are debug lines, so run
# the tests with COHORT_LOG_LEVEL=debug. A worker that fails and legitimately exits is dumped too.
#
# How the Gloo wait found in issue 14's last stop was caught (two shells, a Release build):
#   scripts/watch-stuck-survivors.py /tmp/stacks
#   cd build-rel && for i in $(seq 40); do COHORT_LOG_LEVEL=debug ctest -j3 --timeout 200 \
#     -R 'scenario|remote|elastic\.worker|cohortrun\.elastic|rank0_exit' | tail -1; done
# with two busy loops (`sh -c 'while :; do :; done' &`) or a build beside it for load.
import glob
import os
import re
import subprocess
import sys
import time

ERROR = re.compile(r".*\[rank \d+, worker ([^\]]+)\] cohort ERROR: ")
CHECKED_IN = re.compile(r".* cohort DEBUG: elastic worker '([^']+)': checked in as entry")


def dump(out_dir, n, header):
    path = os.path.join(out_dir, f"stacks-{int(time.time())}-{n}.txt")
    with open(path, "w") as out:
        out.write(header + "\n")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
                cmd = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
            except OSError:
                continue
            if "traine" in comm:  # elastic_trainer, scenario_traine(r)
                out.write(f"==== pid {pid} {cmd}\n")
                out.flush()
                subprocess.run(["gdb", "-p", pid, "-batch", "-ex", "thread apply all bt 25"],
                               stdout=out, stderr=subprocess.STDOUT, timeout=60)
    print("dumped", path, flush=True)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    first_seen, done, dumps = {}, set(), 0
    while True:
        now = time.time()
        for log in glob.glob("/tmp/tmp.*/err"):
            try:
                lines = open(log, errors="replace").read().splitlines()
            except OSError:
                continue
            last_checkin = {}
            for i, line in enumerate(lines):
                if m := CHECKED_IN.match(line):
                    last_checkin[m.group(1)] = i
            for i, line in enumerate(lines):
                m = ERROR.match(line)
                key = (log, m.group(1), i) if m else None
                if not m or key in done:
                    continue
                if last_checkin.get(m.group(1), -1) > i:
                    done.add(key)
                elif now - first_seen.setdefault(key, now) > 2.0:
                    done.add(key)
                    dumps += 1
                    dump(out_dir, dumps, f"{log}: worker {m.group(1)}: line {i}: {line}\n" +
                         "\n".join(lines[-60:]))
        time.sleep(0.2)


if __name__ == "__main__":
    main()
