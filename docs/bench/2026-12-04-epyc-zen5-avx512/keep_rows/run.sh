#!/bin/bash
# The suite's checkpoint/decode pairs (plain and /attention: every head's attention rows kept), randomly
# interleaved repetitions in one process, for each quantized file of quantized_step.
#   BIN=<attn_bench_checkpoint> bash run.sh
BIN=${BIN:?attn_bench_checkpoint}
GGUF=${GGUF:-~/.cache/attn-peers/gguf}
for file in gpt2-small-F32-hf_checkpoints-80fb11ac73e6.Q4_K_M smollm2-135m-F32-hf_checkpoints-80fb11ac73e6.Q4_K_M gpt2-small-F32-hf_checkpoints-80fb11ac73e6.Q8_0; do
  "$BIN" "$GGUF/$file.gguf" --weights stored_quantized --benchmark_filter='checkpoint/decode/threads:[12]/' \
    --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.3 --benchmark_out="$file.json" --benchmark_out_format=json > /dev/null 2>&1
done
