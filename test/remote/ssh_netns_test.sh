#!/usr/bin/env bash
# Remote hosts over ssh, end to end on one machine: every "host" is a network namespace with a
# veth into a bridge (10.213.0.1/24 in the root namespace) and its own sshd started here. The
# real cohortrun reaches them with the real ssh client; the workers are real libcohort programs.
# Exits 77 (skipped) without root, `ip netns` or sshd.
#   ssh_netns_test.sh COHORTRUN HELLO_ALLREDUCE SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 hello=$2 worker=$3 scenario=$4
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root for network namespaces"
[[ -x /usr/sbin/sshd ]] || skip "no /usr/sbin/sshd (apt-get install openssh-server)"
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || skip "no ssh client"
ip netns list >/dev/null 2>&1 || skip "ip netns does not work here"

bridge=cohbr213 hosts=(2 3 4)
ns() { echo "cohort213-$1"; }
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"  # $tmp, start, wait_for, expect...
teardown() {
  for h in "${hosts[@]}" 5; do  # 5: the mpijob scenarios' launcher pod
    ip netns pids "$(ns "$h")" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$(ns "$h")" 2>/dev/null || true
    ip link del "veth213-$h" 2>/dev/null || true
    rm -rf "/etc/netns/$(ns "$h")"
  done
  ip link del "$bridge" 2>/dev/null || true
}
trap 'teardown; cleanup' EXIT
teardown  # what a killed earlier run left behind

ip link add "$bridge" type bridge || skip "cannot create a bridge here"
ip addr add 10.213.0.1/24 dev "$bridge"
ip link set "$bridge" up
ssh-keygen -q -t ed25519 -N "" -f "$tmp/host_key"
ssh-keygen -q -t ed25519 -N "" -f "$tmp/client_key"
cp "$tmp/client_key.pub" "$tmp/authorized_keys"
printf 'UserKnownHostsFile %s\nLogLevel ERROR\n' "$tmp/known_hosts" >"$tmp/ssh_config"
# The MPI Operator's names for the hosts (docs/kubernetes.md): pi-worker-K.pi.default.svc is
# 10.213.0.(K+2) inside every namespace, through /etc/netns/NS/hosts, which ip netns exec mounts
# over /etc/hosts (for sshd and the workers it starts, and for the mpijob scenarios' launcher).
pod_names=""
for h in "${hosts[@]}"; do
  pod_names+="10.213.0.$h pi-worker-$((h - 2)).pi.default.svc"$'\n'
done
mkdir -p /run/sshd
for h in "${hosts[@]}"; do
  n=$(ns "$h")
  ip netns add "$n"
  ip link add "veth213-$h" type veth peer name eth0 netns "$n"
  ip link set "veth213-$h" master "$bridge" up
  ip -n "$n" addr add "10.213.0.$h/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" link set lo up
  mkdir -p "/etc/netns/$n"
  printf '127.0.0.1 localhost\n%s' "$pod_names" >"/etc/netns/$n/hosts"
  # ClientAlive: an sshd whose client vanished behind a partition closes the session, which
  # ends the worker (its stdin closes) instead of leaving it running.
  cat >"$tmp/sshd_$h" <<CONF
ListenAddress 10.213.0.$h
HostKey $tmp/host_key
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
ClientAliveInterval 1
ClientAliveCountMax 3
CONF
  ip netns exec "$n" /usr/sbin/sshd -D -e -f "$tmp/sshd_$h" 2>>"$tmp/sshd.log" &
  disown  # killed by teardown; no "Killed" job notices
done
ssh_flags=(--ssh-identity-file "$tmp/client_key" --ssh-config-file "$tmp/ssh_config")
for h in "${hosts[@]}"; do  # each sshd answers within 10 s
  for _ in $(seq 200); do
    ssh -F "$tmp/ssh_config" -i "$tmp/client_key" -o BatchMode=yes \
      -o StrictHostKeyChecking=accept-new "10.213.0.$h" true 2>/dev/null && continue 2
    sleep 0.05
  done
  cat "$tmp/sshd.log"; fail "sshd in $(ns "$h") does not answer"
done

trainer=(--samples 240 --batch 4 --commit-every 2)
trained_once() {
  expect_exit 0
  expect "$tmp/out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
}
epoch_at() { echo "\[0\] trainer: epoch [0-9]* done rank=0 size=$1 resets=$2"; }
workers_in() {  # workers_in HOST: pids of trainer processes inside that host's namespace
  ip netns pids "$(ns "$1")" | while read -r p; do
    [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$(readlink -f "$worker")" ]] && echo "$p"
  done || true
}
no_workers_left() {  # within 10 s, no trainer runs in any namespace
  for _ in $(seq 200); do
    local left=""
    for h in "${hosts[@]}"; do left+=$(workers_in "$h"); done
    [[ -z $left ]] && return 0
    sleep 0.05
  done
  fail "orphan workers left in the namespaces: $left"
}
secret_not_on_command_lines() {  # the job secret, read from a remote worker's environment
  local pid secret
  pid=$(workers_in 2 | sed -n 1p)
  [[ -n $pid ]] || fail "no worker runs in $(ns 2)"
  secret=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^COHORT_SECRET=//p')
  [[ ${#secret} -eq 64 ]] || fail "worker $pid has no COHORT_SECRET"
  if grep -l -F -- "$secret" /proc/[0-9]*/cmdline 2>/dev/null; then
    fail "the job secret is on a command line"
  fi
  pgrep -f "ssh .* 10.213.0.2 exec /bin/sh" >/dev/null || fail "no ssh client to 10.213.0.2"
}

case $scenario in
static)  # hello_allreduce on two namespace hosts, 3 ranks
  "$cohortrun" "${ssh_flags[@]}" -H 10.213.0.2:2,10.213.0.3:1 "$hello" >"$tmp/out" 2>"$tmp/err" ||
    fail "static job failed"
  [[ $(grep -c "of 3 (gloo): sum of ranks = 3, ranks counted = 3$" "$tmp/out") -eq 3 ]] ||
    fail "not every rank reported the right sum"
  no_workers_left
  ;;
env)  # a remote worker gets the default set and -x, nothing else; SIGUSR1 and SIGUSR2 reach it
  PYTHONPATH=/from/launcher NCCL_DEBUG=WARN NAMED=yes UNLISTED=no "$cohortrun" "${ssh_flags[@]}" \
    -H 10.213.0.2:1 -x NAMED -x GIVEN=value /usr/bin/env >"$tmp/out" 2>"$tmp/err" ||
    fail "the env job failed"
  for line in PYTHONPATH=/from/launcher NCCL_DEBUG=WARN NAMED=yes GIVEN=value "PATH=$PATH"; do
    expect "$tmp/out" "\[0\] $line"
  done
  grep -q "UNLISTED" "$tmp/out" && fail "a variable neither -x nor in the default set reached the worker"
  # Signals passed on through the ssh session's stdin: the job goes on until SIGTERM.
  traps='trap "echo got USR1" USR1; trap "echo got USR2" USR2'
  "$cohortrun" "${ssh_flags[@]}" -H 10.213.0.2:1 /bin/sh -c \
    "$traps; echo ready; while :; do sleep 0.05; done" >"$tmp/out" 2>"$tmp/err" &
  job=$!
  wait_for "$tmp/out" "\[0\] ready"
  kill -USR1 "$job"
  wait_for "$tmp/out" "\[0\] got USR1"
  kill -USR2 "$job"
  wait_for "$tmp/out" "\[0\] got USR2"
  kill -TERM "$job"
  expect_exit 143
  no_workers_left
  ;;
kill_worker)  # elastic: the worker inside one namespace is SIGKILLed; the job goes on
  set_hosts 10.213.0.2:2 10.213.0.3:1
  start "${ssh_flags[@]}" "${discovery[@]}" --min-np 2 -- "${trainer[@]}" \
    --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 3 0)"
  secret_not_on_command_lines
  kill -KILL $(workers_in 3)
  wait_for "$tmp/err" "$(round 1 'size 2: .*')"
  wait_for "$tmp/out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  trained_once
  no_workers_left
  ;;
remove_host)  # every process of one namespace (its sshd too) is killed, and discovery drops it
  set_hosts 10.213.0.2:1 10.213.0.3:1 10.213.0.4:1
  start "${ssh_flags[@]}" "${discovery[@]}" --min-np 2 -- "${trainer[@]}" \
    --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 3 0)"
  # A process of the namespace may exit between the listing and the kill (its parent died first).
  ip netns pids "$(ns 4)" | xargs -r kill -KILL 2>/dev/null || true
  set_hosts 10.213.0.2:1 10.213.0.3:1
  wait_for "$tmp/err" "$(round 1 'size 2: .*')"
  wait_for "$tmp/out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  trained_once
  no_workers_left
  ;;
partition)  # one namespace's link goes down mid-training: heartbeats notice, the job goes on
  set_hosts 10.213.0.2:1 10.213.0.3:1 10.213.0.4:1
  COHORT_PEER_TIMEOUT_SECONDS=1 start "${ssh_flags[@]}" "${discovery[@]}" --min-np 2 \
    --checkin-timeout 3 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 3 0)"
  ip link set veth213-4 down
  wait_for "$tmp/err" "$(round 1 'size 2: .*')"
  wait_for "$tmp/out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  trained_once
  no_workers_left  # the cut-off worker too: its sshd gave up on the client and closed stdin
  ;;
mpijob | mpijob_hostfile)  # the MPI Operator's launcher: environment and files from the doc
  doc=$(dirname "$0")/../../docs/kubernetes.md
  block() { python3 "$(dirname "$0")/../docs/doc_block.py" "$doc" "$@" || fail "doc block $1"; }
  mkdir -p "$tmp/etc/mpi"  # the operator mounts these at /etc/mpi
  block mpijob-hostfile >"$tmp/etc/mpi/hostfile"
  block mpijob-discover-hosts >"$tmp/etc/mpi/discover_hosts.sh"
  chmod 555 "$tmp/etc/mpi/discover_hosts.sh"
  mapfile -t launcher_env < <(block mpijob-env --env | sed "s|=/etc/mpi/|=$tmp/etc/mpi/|")
  # The launcher pod: a namespace of its own (its eth0 is the address its workers reach, and it
  # resolves their names), with only the operator's variables and the test's shorter timeout.
  ip netns add "$(ns 5)"
  ip link add veth213-5 type veth peer name eth0 netns "$(ns 5)"
  ip link set veth213-5 master "$bridge" up
  ip -n "$(ns 5)" addr add 10.213.0.5/24 dev eth0
  ip -n "$(ns 5)" link set eth0 up
  ip -n "$(ns 5)" link set lo up
  mkdir -p "/etc/netns/$(ns 5)"
  printf '127.0.0.1 localhost\n%s' "$pod_names" >"/etc/netns/$(ns 5)/hosts"
  launcher=(ip netns exec "$(ns 5)" env -i PATH="$PATH" HOME="$tmp" COHORT_TIMEOUT_SECONDS=20
    "${launcher_env[@]}" "$cohortrun" "${ssh_flags[@]}" --network-interface eth0)
  if [[ $scenario == mpijob ]]; then  # discovery: two pods' names, slotsPerWorker 2 each
    "${launcher[@]}" --host-discovery-script "$tmp/etc/mpi/discover_hosts.sh" --min-np 2 \
      --max-np 6 "$worker" "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2 \
      >"$tmp/out" 2>"$tmp/err" &
    job=$!
    wait_for "$tmp/out" "$(epoch_at 4 0)"
    touch "$tmp/stop"
    trained_once
  else  # no hosts given: the hostfile, as mpirun reads it
    "${launcher[@]}" "$hello" >"$tmp/out" 2>"$tmp/err" || fail "the hostfile job failed"
    [[ $(grep -c "of 4 (gloo): sum of ranks = 6, ranks counted = 4$" "$tmp/out") -eq 4 ]] ||
      fail "not 4 ranks on the hostfile's 2 hosts of 2 slots"
  fi
  no_workers_left
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "ssh netns ($scenario): all checks passed"
