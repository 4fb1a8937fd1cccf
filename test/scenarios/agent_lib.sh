# The agent scenarios' common part, sourced by each agent_*.sh script after `set -euo pipefail`:
# a real etcd started here on loopback ports, one real cohortrun agent per "node"
# (--rdzv-backend etcd, each its own process), real scenario_trainer workers, and the waits and
# checks the scenarios share. It reads the script's arguments: COHORTRUN SCENARIO_TRAINER SCENARIO.
cohortrun=$1 worker=$2 scenario=$3
tmp=$(mktemp -d)
declare -A agents=()  # node name -> pid
# Each node's workers listen on an address of their own, as on separate hosts.
declare -A address=([a]=127.0.0.1 [b]=127.0.0.2 [c]=127.0.0.3)
declare -A namespace=()  # node name -> the network namespace its agent runs in (netns_*)
etcd_host=127.0.0.1
etcd_pids=()
cleanup() {
  for pid in "${agents[@]}" "${etcd_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  [[ ${#namespace[@]} -gt 0 ]] && remove_namespaces
  rm -rf "$tmp"
}
# netns_bridge NET KEY HOSTS...: hosts as the ssh tests have them: a bridge cohbrNET
# (10.NET.0.1/24 in this namespace, where etcd listens) and for each H of HOSTS a network
# namespace cohortNET-H (10.NET.0.H) with a veth into it, node KEY<H> in namespace[]. A host file
# written to /etc/netns/cohortNET-H/hosts is that namespace's /etc/hosts (ip netns exec mounts it).
# remove_namespaces (called by cleanup) undoes it all.
netns_net=214 netns_hosts=()
netns_bridge() {
  local h
  [[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root for network namespaces"; exit 77; }
  ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns does not work here"; exit 77; }
  netns_net=$1
  local key=$2
  shift 2
  netns_hosts=("$@")
  remove_namespaces  # what a killed earlier run left behind
  ip link add "cohbr$netns_net" type bridge || { echo "SKIP: cannot create a bridge here"; exit 77; }
  ip addr add "10.$netns_net.0.1/24" dev "cohbr$netns_net"
  ip link set "cohbr$netns_net" up
  for h in "${netns_hosts[@]}"; do
    local ns=cohort$netns_net-$h
    namespace[$key$h]=$ns
    ip netns add "$ns"
    ip link add "veth$netns_net-$h" type veth peer name eth0 netns "$ns"
    ip link set "veth$netns_net-$h" master "cohbr$netns_net" up
    ip -n "$ns" addr add "10.$netns_net.0.$h/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
}
remove_namespaces() {
  local h
  for h in "${netns_hosts[@]}"; do
    ip netns pids "cohort$netns_net-$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "cohort$netns_net-$h" 2>/dev/null || true
    ip link del "veth$netns_net-$h" 2>/dev/null || true
    rm -rf "/etc/netns/cohort$netns_net-$h"
  done
  ip link del "cohbr$netns_net" 2>/dev/null || true
}
# The netns_* scenarios: nodes n2, n3 and n4 are network namespaces behind 10.214.0.1.
make_namespaces() {
  netns_bridge 214 n 2 3 4
  etcd_host=10.214.0.1
}
trap cleanup EXIT
fail() {
  echo "FAIL ($scenario): $*"
  for f in "$tmp"/*.out "$tmp"/*.err; do [[ -e $f ]] && { echo "--- $f:"; cat "$f"; }; done
  exit 1
}
export COHORT_SECRET
COHORT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export COHORT_TIMEOUT_SECONDS=20 COHORT_PEER_TIMEOUT_SECONDS=2

free_ports() {  # free_ports N: N loopback ports that were free a moment ago
  python3 -c "import socket
s=[socket.socket() for _ in range($1)]
[x.bind(('127.0.0.1',0)) for x in s]
print(*[x.getsockname()[1] for x in s])"
}
# make_certs: a CA, a server certificate for 127.0.0.1 and a client certificate, in $tmp/tls.
make_certs() {
  local d=$tmp/tls
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 1 \
    -subj /CN=cohort-test-ca 2>/dev/null
  for who in server client; do
    openssl req -newkey rsa:2048 -nodes -keyout "$d/$who.key" -out "$d/$who.csr" \
      -subj "/CN=cohort-test-$who" 2>/dev/null
  done
  # etcd's JSON gateway reaches its own gRPC server with the server certificate: clientAuth too.
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/server.ext"
  printf 'extendedKeyUsage=clientAuth\n' >"$d/client.ext"
  for who in server client; do
    openssl x509 -req -in "$d/$who.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
      -out "$d/$who.crt" -days 1 -extfile "$d/$who.ext" 2>/dev/null
  done
}
# start_etcd N [tls]: an etcd cluster of N members on loopback; $endpoints lists their client
# URLs. With tls, clients must speak https and show a certificate signed by $tmp/tls/ca.crt.
# A member that exits at once (its port was taken between free_ports and its start) makes the
# whole cluster start again on new ports, at most three times.
start_etcd() {
  local n=$1 tls=${2:-} attempt
  [[ $tls == tls ]] && make_certs
  for attempt in 1 2 3; do
    start_etcd_on_free_ports "$n" "$tls" && return 0
    echo "etcd: a member exited at start (attempt $attempt); starting the cluster on new ports" >&2
  done
  fail "etcd could not start: a member exited at once three times (see $tmp/etcd*.log)"
}
# start_etcd_on_free_ports N TLS: one try; 1 if a member exited before the cluster was healthy.
start_etcd_on_free_ports() {
  local n=$1 ports cluster="" i scheme=http tls_flags=() ctl_flags=()
  if [[ $2 == tls ]]; then
    scheme=https
    tls_flags=(--cert-file "$tmp/tls/server.crt" --key-file "$tmp/tls/server.key"
      --trusted-ca-file "$tmp/tls/ca.crt" --client-cert-auth)
    ctl_flags=(--cacert "$tmp/tls/ca.crt" --cert "$tmp/tls/client.crt" --key "$tmp/tls/client.key")
  fi
  read -ra ports <<<"$(free_ports $((2 * n)))"
  for ((i = 0; i < n; i++)); do cluster+="${cluster:+,}m$i=http://$etcd_host:${ports[2 * i + 1]}"; done
  endpoints=""
  for ((i = 0; i < n; i++)); do
    local client=$scheme://$etcd_host:${ports[2 * i]} peer=http://$etcd_host:${ports[2 * i + 1]}
    local command=(etcd --name "m$i" --data-dir "$tmp/etcd$i" --listen-client-urls "$client"
      --advertise-client-urls "$client" --listen-peer-urls "$peer"
      --initial-advertise-peer-urls "$peer" --initial-cluster "$cluster" "${tls_flags[@]}"
      --logger=zap --log-outputs "$tmp/etcd$i.log")
    rm -rf "$tmp/etcd$i"
    printf '%q ' "${command[@]}" >"$tmp/etcd$i.command"  # for restart_etcd
    "${command[@]}" >/dev/null 2>&1 &
    etcd_pids[i]=$!
    endpoints+="${endpoints:+,}$client"
  done
  for _ in $(seq 300); do
    ETCDCTL_API=3 etcdctl --endpoints "$endpoints" "${ctl_flags[@]}" endpoint health \
      >/dev/null 2>&1 && return 0
    for ((i = 0; i < n; i++)); do
      kill -0 "${etcd_pids[i]}" 2>/dev/null && continue
      for ((i = 0; i < n; i++)); do kill "${etcd_pids[i]}" 2>/dev/null; wait "${etcd_pids[i]}" 2>/dev/null; done
      return 1
    done
    sleep 0.1
  done
  fail "etcd did not become healthy within 30 s"
}
# start_proxy NAME [CUT_AFTER]: etcd_proxy.py in front of $endpoints' first member (kept in
# $direct); $endpoints becomes the proxy's. It holds every byte while $tmp/NAME.cut exists, logs
# each connection it accepts to $tmp/NAME.log, and with CUT_AFTER creates $tmp/NAME.cut itself as
# it accepts connection CUT_AFTER + 1.
start_proxy() {
  direct=${direct:-$endpoints}
  python3 "$(dirname "$0")/etcd_proxy.py" "${direct##*:}" "$tmp/$1.cut" "$tmp/$1.log" ${2:+"$2"} \
    >"$tmp/$1.port" &
  agents[proxy-$1]=$!  # ended with the agents by cleanup
  wait_for "$tmp/$1.port" "[0-9][0-9]*"
  endpoints=http://127.0.0.1:$(<"$tmp/$1.port")
}
# closed_port: $endpoints becomes a loopback port that refuses connections for the test's length
# (bound, not listening: nothing else can answer on it).
closed_port() {
  python3 -c "import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1], flush=True); time.sleep(120)" \
    >"$tmp/closed.port" &
  agents[closed]=$!  # ended with the agents by cleanup
  wait_for "$tmp/closed.port" "[0-9][0-9]*"
  endpoints=http://127.0.0.1:$(<"$tmp/closed.port")
}
restart_etcd() {  # restart_etcd I: member I again, on its ports and data
  eval "$(cat "$tmp/etcd$1.command")" >/dev/null 2>&1 &
  etcd_pids[$1]=$!
}
# The lease TTL and check-in timeout that agent() gives every agent; a scenario may set others.
lease_flags=(--rdzv-lease-ttl 2 --checkin-timeout 5)
# agent NODE COHORTRUN_ARGS... -- TRAINER_ARGS...: an agent for NODE in the background.
agent() {
  local node=$1 args=()
  shift
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  # In a network namespace the agent finds its address itself: the one towards etcd.
  local where=() addr=(--node-address "${address[$node]:-127.0.0.1}")
  [[ -n ${namespace[$node]:-} ]] && where=(ip netns exec "${namespace[$node]}") addr=()
  "${where[@]}" "$cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoints" \
    --rdzv-id "job-$scenario" --node-name "$node" "${addr[@]}" "${lease_flags[@]}" \
    --term-grace-seconds 2 "${args[@]}" "$worker" "$@" \
    >"$tmp/$node.out" 2>"$tmp/$node.err" &
  agents[$node]=$!
}
wait_for() {  # wait_for FILE REGEX: a whole line of FILE matches REGEX within 60 s
  for _ in $(seq 1200); do
    grep -qx -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "no line matching '$2' in $1 within 60 s"
}
# wait_for_any REGEX [err]: prints the node whose workers' output (with err: whose agent's own
# log) has a line matching, within 60 s.
wait_for_any() {
  local f ext=${2:-out}
  for _ in $(seq 1200); do
    for f in "$tmp"/*."$ext"; do
      grep -qx -- "$1" "$f" 2>/dev/null && { basename "$f" ".$ext"; return 0; }
    done
    sleep 0.05
  done
  fail "no .$ext line matching '$1' within 60 s" >&2
}
expect_exit() {  # expect_exit NODE CODE: NODE's agent ends within 90 s with CODE
  local pid=${agents[$1]} rc=0
  for _ in $(seq 1800); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && fail "agent $1 still running after 90 s"
  wait "$pid" || rc=$?
  unset "agents[$1]"
  [[ $rc -eq $2 ]] || fail "agent $1 exited $rc, expected $2"
}
expect() {  # expect FILE REGEX: a whole line matches
  grep -qx -- "$2" "$1" || fail "no line matching '$2' in $1"
}
trained_once() {  # trained_once NODE: rank 0 ran on NODE and checked the committed history
  expect "$tmp/$1.out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
}
epoch_at() {  # epoch_at SIZE RESETS: rank 0 finished an epoch in that world
  echo "\[0\] trainer: epoch [0-9]* done rank=0 size=$1 resets=$2"
}
source "$(dirname "$0")/worker_pid.sh"
trainer=(--samples 240 --batch 4 --commit-every 2)
until_stop=(--until-file "$tmp/stop" --step-delay-ms 2)
# finish_with_no_reset: rank 0 (on node a) finishes one more epoch in the world of a and b with
# no reset, then both agents end with 0 and rank 0's history was trained exactly once.
finish_with_no_reset() {
  local first
  first=$(grep -c "epoch [0-9]* done rank=0" "$tmp/a.out")
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $((first)) done rank=0 size=2 resets=0"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  expect "$tmp/a.out" "\[0\] trainer: finished epochs=[0-9]* resets=0"
}
