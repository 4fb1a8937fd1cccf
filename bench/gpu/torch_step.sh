#!/usr/bin/env bash
# GPU benchmark: the time of a training step of the digits CNN (bench/peers/models.py) on the GPU,
# 2 ranks sharing it, through hvd.DistributedOptimizer (cohortrun; the staged device backend,
# COHORT_DEVICE_OPERATIONS=auto) and through torch's DistributedDataParallel over the gloo
# backend on the same CUDA tensors (torchrun), same model, batch and steps: bench/peers/step's
# programs with --device cuda. Both must end with identical parameters on every rank. Prints a
# markdown table (title, command, one row per system); logs in OUT_DIR. Exits 77 without a GPU.
#   bench/gpu/torch_step.sh BUILD_DIR OUT_DIR [--quick]
# needs: cohortrun cohort_python
set -euo pipefail
# shellcheck source=lib/python_bench.sh
source "$(dirname "$0")/lib/python_bench.sh"
gpu_python_setup torch_step "$@"

steps=(--warmup 10 --steps 200)
[[ $quick == 1 ]] && steps=(--warmup 5 --steps 40)
args=(--models digits --device cuda "${steps[@]}")
step=$root/bench/peers/step
cohort_log=$out/torch_step.cohort.log ddp_log=$out/torch_step.ddp.log
export PYTHONPATH=$pypath

run() {  # run LOG COMMAND...: bounded, its output in LOG; a failure ends the script
  timeout 120 "${@:2}" >"$1" 2>&1 || { tail -20 "$1"; echo "FAIL (torch_step): $2 exited $?"; exit 1; }
}
run "$cohort_log" "$build/bin/cohortrun" -np 2 "$python" "$step/step_cohort.py" \
  --system "Cohort (hvd.DistributedOptimizer)" "${args[@]}"
run "$ddp_log" "$python" -m torch.distributed.run --standalone --nproc-per-node 2 \
  "$step/step_torch.py" --system "PyTorch DDP (gloo, CUDA tensors)" "${args[@]}"

echo "### Training step on the GPU: digits CNN, 2 ranks sharing one GPU"
echo
echo "\`bench/gpu/torch_step.sh BUILD_DIR OUT_DIR${3:+ $3}\` ($(PYTHONPATH=$pypath "$python" -c \
  'import torch; print(torch.__version__, torch.cuda.get_device_name())'))"
echo
"$python" - "$cohort_log" "$ddp_log" <<'PY'
import re
import sys

print("| system | ranks | params | batch/rank | timed steps | ms/step (slowest rank) | "
      "ranks' parameters |")
print("|---|---|---|---|---|---|---|")
for log in sys.argv[1:]:
    text = open(log).read()
    rows = [dict(re.findall(r"(\w+)=(\S+)", line.split(" system=")[0] + " " +
                            line.split(" trial=")[1]))
            | {"system": line.split(" system=")[1].split(" trial=")[0]}
            for line in re.findall(r"RESULT workload=step .*", text)]
    if not rows:
        sys.exit(f"FAIL (torch_step): no RESULT line in {log}")
    same = len(re.findall(r"parameters identical on all", text)) == int(rows[0]["np"])
    if not same:
        sys.exit(f"FAIL (torch_step): the ranks' parameters differ ({log})")
    r = rows[0]
    print(f"| {r['system']} | {r['np']} | {r['params']} | {r['batch']} | {r['steps']} | "
          f"{max(float(x['ms']) for x in rows):.2f} | identical |")
PY
