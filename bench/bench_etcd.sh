# shellcheck shell=bash
# One etcd member on two free loopback ports, for the benches that meet in etcd
# (bench/agent_recovery_bench.sh, bench/scale/agent_rounds.sh). Sourced:
#   start_bench_etcd NAME DIR    starts it (data and log in DIR); sets endpoint and etcd_pid
#   wait_bench_etcd              waits until it answers, at most 30 s; else fails naming its log
start_bench_etcd() {
  local name=$1 dir=$2 cport pport
  read -r cport pport <<<"$(python3 -c "import socket
s=[socket.socket() for _ in range(2)]
[x.bind(('127.0.0.1',0)) for x in s]
print(*[x.getsockname()[1] for x in s])")"
  endpoint=http://127.0.0.1:$cport
  bench_etcd_log=$dir/etcd.log
  etcd --name "$name" --data-dir "$dir/etcd" --listen-client-urls "$endpoint" \
    --advertise-client-urls "$endpoint" --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "$name=http://127.0.0.1:$pport" --logger=zap --log-outputs "$bench_etcd_log" &
  etcd_pid=$!
}
wait_bench_etcd() {
  for _ in $(seq 300); do
    ETCDCTL_API=3 etcdctl --endpoints "$endpoint" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1  # a bounded retry of a server that is starting, not an ordering
  done
  echo "etcd at $endpoint did not answer within 30 s (log: $bench_etcd_log)" >&2
  return 1
}
