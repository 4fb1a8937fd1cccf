#!/usr/bin/env python3
"""Checks the control routes of an elastic job with host leaders (COHORT_CONTROL_LEADERS=1).

Reads cohortrun's stderr (its round lines and the workers' output, COHORT_LOG_LEVEL=debug):

    [cohortrun] round 2 (2 resets): size 5: [0] worker 0 127.0.0.1:0, [1] worker 2 127.0.0.2:1, ...
    [4] cohort DEBUG: control: rank 4 on host 127.0.0.3: through rank 3, this host's leader at 127.0.0.3:4711

and checks, against the launcher's rounds, that every rank that went through a leader went
through one on its own host: the leader listens on the rank's host, and some round placed both
the rank and its leader on that host. In the last round, every rank that is not the lowest of its
host must have gone through that lowest rank. Hosts are IPv4 addresses (a worker listens on its
host's address). Exits 1 naming the first wrong route.

Usage: check_control_routes.py STDERR_FILE
"""
import re
import sys

ROUND = re.compile(r"\[cohortrun\] round (\d+) \([^)]*\): size \d+: (.*)$")
MEMBER = re.compile(r"\[(\d+)\] worker \d+ ([0-9.]+):\d+")
THROUGH = re.compile(r"cohort DEBUG: control: rank (\d+) on host (\S+): through rank (\d+), "
                     r"this host's leader at ([0-9.]+):\d+$")


def main(path):
    lines = open(path, errors="replace").read().splitlines()
    rounds = []
    for line in lines:
        m = ROUND.match(line)
        if m:
            rounds.append({int(r): host for r, host in MEMBER.findall(m.group(2))})
    if not rounds:
        sys.exit("no round line in " + path)
    routes = set()
    for line in lines:
        m = THROUGH.search(line)
        if not m:
            continue
        rank, host, leader, address = int(m[1]), m[2], int(m[3]), m[4]
        if address != host:
            sys.exit(f"rank {rank} on {host} went through rank {leader} at {address}: {line}")
        if not any(r.get(rank) == host and r.get(leader) == host for r in rounds):
            sys.exit(f"no round placed rank {rank} and its leader rank {leader} on {host}: {line}")
        routes.add((rank, host, leader))
    last = rounds[-1]
    for rank, host in sorted(last.items()):
        lowest = min(r for r, h in last.items() if h == host)
        if rank != lowest and (rank, host, lowest) not in routes:
            sys.exit(f"the last round's rank {rank} on {host} never went through rank {lowest}, "
                     f"its host's lowest rank")
    print(f"{len(routes)} control routes checked over {len(rounds)} rounds: each through its "
          f"own host's leader")


if __name__ == "__main__":
    main(sys.argv[1])
