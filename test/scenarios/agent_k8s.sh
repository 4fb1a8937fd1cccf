#!/usr/bin/env bash
# The Kubernetes operators' conventions end to end (docs/kubernetes.md): cohortrun started with
# no flag at all, and exactly the environment that a PyTorchJob gives its pods, read out of the
# doc's block. Each pod is a network namespace with its own host name (the pod's name) and an
# /etc/hosts that resolves the doc's etcd service name to the real etcd started here.
#   agent_k8s.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"
doc=$(dirname "$0")/../../docs/kubernetes.md

doc_env() {  # doc_env MARKER: the block's NAME=VALUE lines, without their comments
  python3 "$(dirname "$0")/../docs/doc_block.py" "$doc" "$1" --env || fail "the doc's block $1"
}

# The pods: namespaces 10.215.0.N behind a bridge of their own (10.215.0.1, where etcd listens),
# each with an /etc/hosts of its own.
make_pods() {  # make_pods HOSTS_LINE: every pod's /etc/hosts gets HOSTS_LINE
  command -v unshare >/dev/null || { echo "SKIP: no unshare for the pods' host names"; exit 77; }
  netns_bridge 215 p 2 3 4
  local h
  for h in "${netns_hosts[@]}"; do
    mkdir -p "/etc/netns/cohort215-$h"  # ip netns exec mounts it over /etc/hosts
    printf '127.0.0.1 localhost\n%s\n' "$1" >"/etc/netns/cohort215-$h/hosts"
  done
}
start_etcd_at() {  # start_etcd_at IP PORT: one etcd member listening there
  local client=http://$1:$2 peer=http://$1:$(($2 + 1))
  etcd --name m0 --data-dir "$tmp/etcd0" --listen-client-urls "$client" \
    --advertise-client-urls "$client" --listen-peer-urls "$peer" \
    --initial-advertise-peer-urls "$peer" --initial-cluster "m0=$peer" \
    --logger=zap --log-outputs "$tmp/etcd0.log" >/dev/null 2>&1 &
  etcd_pids[0]=$!
  for _ in $(seq 300); do
    ETCDCTL_API=3 etcdctl --endpoints "$client" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "etcd did not become healthy within 30 s"
}
# pod NAME NAMESPACE ENV...: cohortrun as the pod's command, with only ENV (and PATH, HOME and the
# tests' shorter Cohort timeouts), its host name NAME, its output in $tmp/NAME.{out,err}.
pod() {
  local name=$1 ns=$2
  shift 2
  ip netns exec "$ns" unshare --uts -- env -i PATH="$PATH" HOME="$tmp" \
    COHORT_TIMEOUT_SECONDS="$COHORT_TIMEOUT_SECONDS" \
    COHORT_PEER_TIMEOUT_SECONDS="$COHORT_PEER_TIMEOUT_SECONDS" "$@" \
    sh -c 'hostname "$0" && exec "$@"' "$name" \
    "$cohortrun" "$worker" "${trainer[@]}" "${until_stop[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  agents[$name]=$!
}

case $scenario in
k8s_pytorchjob)  # three pods of an elastic PyTorchJob (2:3 nodes, 2 workers each); one is lost
  mapfile -t env_lines < <(doc_env pytorchjob-env)
  endpoint=$(printf '%s\n' "${env_lines[@]}" | sed -n 's/^PET_RDZV_ENDPOINT=//p')
  [[ $endpoint == *:* ]] || fail "the doc's block has no PET_RDZV_ENDPOINT host:port"
  for i in "${!env_lines[@]}"; do
    [[ ${env_lines[i]} == COHORT_SECRET=* ]] && env_lines[i]=COHORT_SECRET=$COHORT_SECRET
  done
  make_pods "10.215.0.1 ${endpoint%:*}"
  start_etcd_at 10.215.0.1 "${endpoint##*:}"
  for k in 0 1 2; do pod "resnet-worker-$k" "cohort215-$((k + 2))" "${env_lines[@]}"; done
  # All three pods in one round: the node names are the pods' host names.
  home=$(wait_for_any "\[0\] trainer: start worker=resnet-worker-[0-2]\.0\.0 rank=0 size=6 resets=0 epoch=0")
  wait_for "$tmp/$home.out" "$(epoch_at 6 0)"
  victim=resnet-worker-2
  [[ $home == "$victim" ]] && victim=resnet-worker-1
  # The pod is deleted: its agent and workers die at once.
  ip netns pids "cohort215-$((${victim##*-} + 2))" | xargs -r kill -KILL 2>/dev/null || true
  wait "${agents[$victim]}" 2>/dev/null || true
  unset "agents[$victim]"
  wait_for "$tmp/$home.out" "$(epoch_at 4 1)"
  touch "$tmp/stop"
  for k in 0 1 2; do
    [[ resnet-worker-$k == "$victim" ]] || expect_exit "resnet-worker-$k" 0
  done
  trained_once "$home"
  grep -q "PET_" "$tmp/$home.err" && fail "cohortrun complained about the operator's variables"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "k8s ($scenario): all checks passed"
