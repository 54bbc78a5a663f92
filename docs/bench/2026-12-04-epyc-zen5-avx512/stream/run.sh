#!/bin/bash
# Zen 5: the streaming kernel against the same invocation's FMA peak, AVX-512 and AVX2 builds of main,
# and ggml's float32 flash attention on the same shape between them; ROUNDS rounds.
OUT=${OUT:-.}  # with attn_bench_kernels.avx512 / .avx2 (main at c4709f7, bench preset and an -mavx2 -mfma -mf16c build) and ggml_flash_attn (tools/benchmarks/peers/ggml_flash_attn.cpp) here
F='^(fma_peak/threads:[12]|heads/stream/d:64/threads:[12]/positions:(2048|4096)|stream_parts/.*)'
LIBS=~/.cache/attn-peers/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
for round in ${ROUNDS:-1 2 3}; do
  for isa in avx512 avx2; do
    bin=$OUT/attn_bench_kernels.$isa
    echo "round $round $isa $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
    $bin --benchmark_filter="$F" --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_out=$OUT/$isa-$round.json --benchmark_out_format=json > /dev/null 2>&1
  done
  for threads in 1 2; do for n in 2048 4096; do
    echo "round $round ggml $threads $n $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
    $OUT/ggml_flash_attn $LIBS $n $threads 5 2>/dev/null | tail -1 >> $OUT/ggml-$round.jsonl
  done; done
done
echo "done $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
