#!/bin/bash
# The streaming kernel on one and two threads, two builds in turn: `before` with each worker's
# scratch arrays allocated one after another (c72cf63), `after` with them in one block, the
# workers' arrays 64 KiB apart; and the FMA peak, all in the same rounds.
#   bash run.sh BEFORE_BENCH AFTER_BENCH [out folder] [rounds]     (~1 min a round)
set -euo pipefail
before=$1
after=$2
out=${3:-$(dirname "$0")}
rounds=${4:-5}
common=(--benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
        --benchmark_out_format=json)
stream='^heads/stream/d:64/threads:[12]/positions:(2048|4096)/'
for round in $(seq 1 "$rounds"); do
    "$after" --benchmark_filter='^fma_peak/' "${common[@]}" --benchmark_out="$out/fma-$round.json" > /dev/null
    for build in before after; do
        bench=$([ "$build" = before ] && echo "$before" || echo "$after")
        "$bench" --benchmark_filter="$stream" "${common[@]}" --benchmark_out="$out/$build-$round.json" > /dev/null
    done
done
