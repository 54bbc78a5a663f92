#!/bin/bash
# Zen 5: the streaming kernel against the same invocation's FMA peak, the AVX-512 (bench preset) and AVX2
# (bench-avx2 preset) builds, and ggml's float32 flash attention on the same shape with its best CPU
# variant for this machine (zen4) and with its AVX2 variant alone (haswell, the folder
# tools/benchmarks/peers/llamacpp_setup.held_to makes); ROUNDS rounds, each system in turn.
OUT=${OUT:-.}  # ggml_flash_attn (tools/benchmarks/peers/ggml_flash_attn.cpp) here
ROOT=${ROOT:-../../../..}
F='^(fma_peak/threads:[12]|heads/stream/d:64/threads:[12]/positions:(2048|4096))/'
LIBS=~/.cache/attn-peers/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
declare -A VARIANT=([native]=$LIBS [avx2]=$HOME/.cache/attn-peers/backends-avx2)
declare -A BUILD=([native]=$ROOT/build/bench/bench [avx2]=$ROOT/build/bench-avx2/bench)
for round in ${ROUNDS:-1 2 3}; do
  for isa in native avx2; do
    echo "round $round attn $isa $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
    ${BUILD[$isa]}/attn_bench_kernels --benchmark_filter="$F" --benchmark_min_time=0.5 --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_out=$OUT/$isa-$round.json --benchmark_out_format=json \
      > /dev/null 2>&1
    for threads in 1 2; do for n in 2048 4096; do
      echo "round $round ggml $isa $threads $n $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
      $OUT/ggml_flash_attn ${VARIANT[$isa]} $n $threads 5 2>/dev/null | tail -1 >> $OUT/ggml-$isa-$round.jsonl
    done; done
  done
done
echo "done $(date -u +%H:%M:%S) $(uptime)" >> $OUT/session.log
