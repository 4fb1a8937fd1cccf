#!/bin/sh
# An example host-discovery script for cohortrun's elastic mode:
#   cohortrun --host-discovery-script examples/discover_hosts.sh --min-np 2 ./train
# cohortrun runs it every --discovery-interval seconds. It prints one line per usable host,
# "host" or "host:slots" ('#' starts a comment), and exits 0. A non-zero exit, a run longer than
# --discovery-timeout, or a line that is not a host makes cohortrun log the problem and keep the
# last good list. No lines means there are no hosts right now.
#
# This one reads the list from a file (COHORT_HOSTS_FILE, default ./hosts), so an operator changes
# the job's hosts by editing it; a real one would ask the cluster's scheduler or cloud API.
# Replace the file atomically (write a new one, then mv) so a run never reads half of it.
set -eu
hosts_file=${COHORT_HOSTS_FILE:-./hosts}
if [ ! -r "$hosts_file" ]; then
  echo "discover_hosts.sh: cannot read $hosts_file" >&2
  exit 1
fi
grep -v '^[[:space:]]*$' "$hosts_file" || true
