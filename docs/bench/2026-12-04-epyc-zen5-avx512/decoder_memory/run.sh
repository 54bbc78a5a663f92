#!/bin/bash
# Before (ckpt_base: c4709f7's attn_bench_checkpoint) and after (ckpt_keep: the Decoder keeping its working
# memory) in turn, three rounds: prefill of 128 and 512 positions and 16 steps after 128 and 512, 5 repetitions
# each, GPT-2 small F32 and SmolLM2-135M BF16 (16-bit weights), 1 and 2 threads.
#   BIN_DIR=<folder with ckpt_base and ckpt_keep> OUT=<folder> bash run.sh; python3 compare.py <folder>
BIN_DIR=${BIN_DIR:?the folder with ckpt_base and ckpt_keep}
OUT=${OUT:-rounds}; mkdir -p "$OUT"
CHECKPOINTS=${CHECKPOINTS:-~/.cache/attn-peers/checkpoints}
for round in 1 2 3; do
 for model in gpt2-small-F32-hf_checkpoints smollm2-135m-BF16-hf_checkpoints; do
  for t in 1 2; do for bin in base keep; do
    W=""; [ $model = smollm2-135m-BF16-hf_checkpoints ] && W="--weights stored_16_bit"
    "$BIN_DIR/ckpt_$bin" "$CHECKPOINTS/$model" peer --threads $t --prefill 128,512 --decode 128,512 --steps 16 \
      --reps 5 --keep-rows 0 $W > "$OUT/$model-$t-$bin-$round.json"
  done; done
 done
done
