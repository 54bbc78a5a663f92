#!/bin/sh
# Before and after the columns cut by the workers' measured rates, in turn, ROUNDS rounds: two
# threads on kept Workers (attn_bench_checkpoint peer), prefill of 128 positions (shared by columns)
# and decoding steps at 128 cached, GPT-2 small F32 and SmolLM2-135M BF16 (stored 16-bit).
#   sh run.sh BEFORE_BINARY AFTER_BINARY OUT_DIR [ROUNDS]
set -eu
before=$1 after=$2 out=$3 rounds=${4:-10}
checkpoints=${ATTN_CHECKPOINTS:-$HOME/.cache/attn-peers/checkpoints}
mkdir -p "$out"
lscpu > "$out/lscpu.txt"
for round in $(seq 1 "$rounds"); do
  for build in before after; do
    binary=$before
    [ "$build" = after ] && binary=$after
    for model in gpt2-small-F32:converted smollm2-135m-BF16:stored_16_bit; do
      name=${model%%:*} weights=${model#*:}
      load=$(cut -d' ' -f1 /proc/loadavg)
      "$binary" "$checkpoints/$name-hf_checkpoints" peer --threads 2 --prefill 128 --decode 128 --steps 16 \
        --reps 10 --weights "$weights" > "$out/$name.$build.$round.json"
      echo "$round $build $name load $load" >> "$out/runs.txt"
    done
  done
done
