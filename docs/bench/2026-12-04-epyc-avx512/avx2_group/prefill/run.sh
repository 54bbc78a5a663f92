#!/bin/sh
# run.sh: BIN_DIR holds attn_bench_checkpoint_base (97990f4) and _group (2becaff), each an AVX2 build (see ../README.md);
# the JSON goes to OUT (default: here)
OUT=${OUT:-$(dirname "$0")}
G=$HOME/.cache/attn-peers/checkpoints/gpt2-small-F32-hf_checkpoints
S=$HOME/.cache/attn-peers/checkpoints/smollm2-135m-BF16-hf_checkpoints
for round in 1 2 3; do for b in base group; do
  for th in 1 2; do
  $BIN_DIR/attn_bench_checkpoint_$b $G peer --threads $th --prefill 128,512 --decode 128 --steps 4 --reps 3 --keep-rows 0 > $OUT/gpt2_${b}_t${th}_$round.json 2>/dev/null
  $BIN_DIR/attn_bench_checkpoint_$b $S peer --threads $th --prefill 128,512 --decode 128 --steps 4 --reps 3 --keep-rows 0 --weights stored_16_bit > $OUT/smol_${b}_t${th}_$round.json 2>/dev/null
  done
done; done
echo done > $OUT/done
