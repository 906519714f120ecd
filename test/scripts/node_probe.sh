#!/usr/bin/env bash
# node_probe.sh measures the Node image of images/node/recipe.sh under the
# container flags runtime/spec.go gives every run (read-only root, no
# network, memory = memory+swap, one CPU, pids, a noexec /tmp, no
# capabilities, no-new-privileges, the sandbox user, nofile/fsize/core
# ulimits), and how Node meets the data limit the runner sets today (memory
# less a quarter, at most 128 MiB less). The prototype's figures in
# docs/design/runtimes.md come from it. Not part of `make test`.
#
#   node_probe.sh [IMAGE [MEMORY_MIB [RUNS]]]
set -euo pipefail
IMAGE=${1:-sandbox-node:24}
MEM=${2:-256}
RUNS=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
mem=$((MEM << 20))
quarter=$((mem / 4)); head=$((128 << 20)); [ "$quarter" -lt "$head" ] && head=$quarter
data=$((mem - head))
dmib=$((data >> 20))
# The heap the design gives Node: three quarters of the data limit less
# the 16 MiB of anonymous memory a warm stub holds, at least 16 MiB.
heap=$(( (dmib - 16) * 3 / 4 )); [ "$heap" -lt 16 ] && heap=16
tmpfs=$((16 << 20))
flags=(--rm -i --network none --read-only --tmpfs "/tmp:rw,noexec,nosuid,nodev,mode=1777,size=$tmpfs"
  --cap-drop ALL --security-opt no-new-privileges --ipc private --shm-size "$tmpfs" --log-driver none
  --memory "$mem" --memory-swap "$mem" --cpus 1 --pids-limit 64 --user 10001:10001
  --ulimit nofile=256:256 --ulimit "fsize=$tmpfs:$tmpfs" --ulimit core=0:0)
# inside runs a bash script in a container of IMAGE.
inside() { docker run "${flags[@]}" "$@"; }
# The stub's settings: 2 MiB thread stacks, two libuv threads, one V8 worker.
tuned="ulimit -s 2048; export UV_THREADPOOL_SIZE=2; node --v8-pool-size=1 --max-old-space-size=$heap"

echo "image $IMAGE: $(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec), memory $MEM MiB," \
  "data limit $dmib MiB, heap $heap MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
inside "$IMAGE" bash -c 'node --version; grep -E "^(Uid|NoNewPrivs|CapEff)" /proc/self/status | tr "\n\t" "  "; echo'

echo "-- node -e 0, $RUNS times in one container: wall p50/min/max and CPU (user+sys) mean"
for v in "node" "$tuned"; do
  printf '%-30s ' "${v:0:28}"
  inside "$IMAGE" bash -c "TIMEFORMAT='%R %U %S'; for i in \$(seq $RUNS); do { time ($v -e 0) ; } 2>&1; done" |
    sort -n | awk '{w[NR]=$1; c+=$2+$3} END {printf "p50 %.0f ms, min %.0f, max %.0f; CPU %.0f ms\n",
      w[int((NR+1)/2)]*1000, w[1]*1000, w[NR]*1000, c/NR*1000}'
done

echo "-- docker run --rm of node -e 0, 5 times (the whole container cycle, ms)"
for i in 1 2 3 4 5; do
  s=$(date +%s%N); inside "$IMAGE" node -e 0; printf '%s ' "$(( ($(date +%s%N) - s) / 1000000 ))"
done; echo

echo "-- VmData / VmRSS at start (MiB)"
st='const s=require("fs").readFileSync("/proc/self/status","utf8");console.log(s.match(/Vm(Data|RSS):\s+\d+/g).map(x=>x.replace(/\s+/," ")).join(" "))'
for v in "node" "exec node --jitless"; do
  printf '%-30s ' "$v"; inside "$IMAGE" bash -c "$v -e '$st'" | awk '{printf "%s %d MiB, %s %d MiB\n", $1, $2/1024, $3, $4/1024}'
done

echo "-- node under the data limit set before it starts (ulimit -d $dmib MiB, as run.py does)"
for v in "node" "node --jitless"; do
  printf '%-30s ' "$v"; inside "$IMAGE" bash -c "ulimit -d $((data >> 10)); $v -e 'console.log(\"started\")'" 2>&1 |
    grep -E "started|Fatal" | head -1 || true
done

echo "-- the data limit set after warm-up at VmData + ($dmib MiB - RssAnon), then a program (node_limit_probe.js)"
for b in hello array objects string bufferBig bufferGrow typed worker spawn; do
  s=$(date +%s%N)
  out=$(inside -v "$here:/probe:ro" -e "D_MIB=$dmib" "$IMAGE" bash -c "$tuned /probe/node_limit_probe.js $b" 2>&1 || true)
  printf '%-11s %s | %s | container %s ms\n' "$b" \
    "$(printf '%s\n' "$out" | grep -E '^warm' | sed 's/^warm: //; s/RLIMIT_DATA/limit/' | head -1)" \
    "$(printf '%s\n' "$out" | grep -vE '^(warm|\s*[0-9]+: 0x|$|#$|-----|\[|<---)' | tr '\n' ' ' | cut -c1-110)" \
    "$(( ($(date +%s%N) - s) / 1000000 ))"
done

echo "-- teardown: from the program's end (node: the exit event; python: atexit) to the process gone, p50 of $RUNS (ms)"
clock='date +%s%6N'
nodeend='process.on("exit", () => require("fs").writeSync(1, String(Math.round((performance.timeOrigin + performance.now()) * 1000))))'
pyend='import atexit, time; atexit.register(lambda: print(time.time_ns() // 1000, end=""))'
p50='{v[NR]=$1} END {printf "p50 %.1f, min %.1f\n", v[int((NR+1)/2)]/1000, v[1]/1000}'
# Each: a label, the image, the program that prints its end time (":" for the probe's own cost: two dates).
for row in "node|$IMAGE|node -e '$nodeend'" "python|sandbox-python:3.11|python3 -I -c '$pyend'" "baseline|$IMAGE|:"; do
  IFS='|' read -r label image prog <<<"$row"
  printf '%-9s ' "$label"
  inside "$image" bash -c "for i in \$(seq $RUNS); do a=\$($prog); [ -n \"\$a\" ] || a=\$($clock); b=\$($clock); echo \$((b - a)); done" |
    sort -n | awk "$p50"
done

echo "-- Bash's session shell, driven as the supervisor would (bash_session_probe.js)"
inside -v "$here:/probe:ro" "$IMAGE" bash -c 'bash --version | head -1; node /probe/bash_session_probe.js'

echo "-- the JavaScript evaluator (node_eval_probe.js)"
inside -v "$here:/probe:ro" "$IMAGE" bash -c \
  'node --expose-internals --disable-warning=ExperimentalWarning /probe/node_eval_probe.js </dev/null'
