#!/bin/bash
# same-run session: before/after binaries alternating, fma_peak in every invocation, ggml between
cd /work/wt-stream
OUT=docs/bench/2026-12-02-stream
F='^(fma_peak/threads:[12]|heads/stream/d:64/threads:[12]/positions:(2048|4096)|stream_parts/.*)'
LIBS=~/.cache/attn-peers/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
for round in ${ROUNDS:-1 2 3}; do
  for isa in avx512 avx2; do
    for which in before after; do
      bin=build/baseline/attn_bench_kernels.$isa; [ $which = after ] && bin=build/after/attn_bench_kernels.$isa
      echo "round $round $isa $which $(uptime)" >> $OUT/session.log
      $bin --benchmark_filter="$F" --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_out=$OUT/$isa-$which-$round.json --benchmark_out_format=json > /dev/null 2>&1
    done
  done
  for threads in 1 2; do for n in 2048 4096; do
    echo "round $round ggml $threads $n $(uptime)" >> $OUT/session.log
    build/ggml_flash_attn $LIBS $n $threads 5 2>/dev/null | tail -1 >> $OUT/ggml-$round.jsonl
  done; done
done
echo "done $(uptime)" >> $OUT/session.log
