#!/bin/bash
# Is the streaming kernel's shortfall on two threads the team's or the machine's? Each benchmark
# on one thread three ways, in turn: alone on CPU 0; as two processes at once, one on each CPU
# (nothing shared but the machine); and the kernel on a team of two threads in one process.
#   bash run.sh [attn_bench_kernels] [out folder] [rounds]      (~45 s a round; first=K starts at round K)
set -euo pipefail
bench=${1:-build/bench/bench/attn_bench_kernels}
out=${2:-$(dirname "$0")}
rounds=${3:-3}
common=(--benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
        --benchmark_out_format=json)
for round in $(seq "${first:-1}" "$rounds"); do
    for name in fma_peak 'heads/stream/d:64' ; do
        for n in $([ "$name" = fma_peak ] && echo none || echo 2048 4096); do
            tail=$([ "$n" = none ] && echo "" || echo "/positions:$n")
            tag=$([ "$n" = none ] && echo fma || echo "stream$n")
            one="^${name}/threads:1${tail}/"
            taskset -c 0 "$bench" --benchmark_filter="$one" "${common[@]}" \
                --benchmark_out="$out/$tag-alone-$round.json" > /dev/null
            taskset -c 0 "$bench" --benchmark_filter="$one" "${common[@]}" \
                --benchmark_out="$out/$tag-pair0-$round.json" > /dev/null &
            taskset -c 1 "$bench" --benchmark_filter="$one" "${common[@]}" \
                --benchmark_out="$out/$tag-pair1-$round.json" > /dev/null &
            wait
            "$bench" --benchmark_filter="^${name}/threads:2${tail}/" "${common[@]}" \
                --benchmark_out="$out/$tag-team-$round.json" > /dev/null
        done
    done
done
