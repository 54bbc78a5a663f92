#!/bin/bash
# The streaming kernel timed two ways in one invocation per round, beside the FMA peak: heads/stream
# (attend_heads: threads started and the result allocated every call) and heads_kept/stream
# (attend_heads_into on kept Workers into a reused result), 1 and 2 threads, 2,048 and 4,096 positions.
#   bash run.sh [attn_bench_kernels] [out folder] [rounds]      (~1 min a round)
set -euo pipefail
bench=${1:-build/bench/bench/attn_bench_kernels}
out=${2:-$(dirname "$0")}
rounds=${3:-5}
filter='^(fma_peak/threads:[12]|heads(_kept)?/stream/d:64/threads:[12]/positions:(2048|4096))/'
for round in $(seq 1 "$rounds"); do
    "$bench" --benchmark_filter="$filter" --benchmark_min_time=0.5 --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
        --benchmark_out="$out/round-$round.json" --benchmark_out_format=json > /dev/null 2>&1
done
