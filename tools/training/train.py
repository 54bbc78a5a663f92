"""Train the store's tokenizer and model.

    python3 tools/training/train.py --data models/store --steps 6000          # from scratch
    python3 tools/training/train.py --data models/store --steps 6000 --resume # continue
    python3 tools/training/train.py --data models/store --measure 30          # throughput only
    python3 tools/training/train.py --architecture llama --tokenizer models/store \
        --out models/store-llama --checkpoints /work/ckpt-llama       # Llama architecture

Step 1 learns the BPE tokenizer from train.tsv (vocabulary.txt, merges.txt in
--out) unless --resume finds them already there or --tokenizer names a folder
holding them. --architecture picks the model of tools/common/model.py: `store` (StoreModel,
the default) or `llama` (LlamaStoreModel, Hugging Face LlamaForCausalLM names). Step 2 trains the model:
next-token cross-entropy over every position of `<s> name <sep> description </s>`
(padding ignored), AdamW, linear warm-up then cosine decay, a fixed number of
products per batch, padded to the batch's longest. The data order is a pure
function of (seed, epoch), so a resumed run sees exactly the batches the
uninterrupted run would have. Checkpoints (model, optimizer, step, RNG states,
loss rows, elapsed time) go to --checkpoints every --checkpoint-minutes.

Outputs: --out/loss.csv (step, seconds, train_loss, validation_loss in
nats/token), --out/loss.png, --checkpoints/final.pt (weights + summary) which
tools/training/export.py turns into model.safetensors + manifest.json.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import sys
import time
from pathlib import Path

# Before torch loads its OpenMP runtime and BLAS: on a shared 2-core machine,
# spinning OpenMP workers fight the BLAS threads and the other processes.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common.model import LlamaSettings, LlamaStoreModel  # noqa: E402
from common.model import Settings, StoreModel  # noqa: E402
from common.tokenizer import Tokenizer, read_products  # noqa: E402

IGNORE = -100
PLOT_TITLE = ["store model: next-token loss"]  # set from --architecture


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


# ----------------------------------------------------------------------------
# data


def encode_split(tokenizer, products, longest):
    return [tokenizer.product_ids(name, description, longest) for name, description in products]


def epoch_batches(lengths, batch_size, seed, epoch, pool=64):
    """Batches (lists of product indices) of one epoch, deterministic in (seed, epoch).

    Shuffle, then sort by length inside pools of `pool` batches so a batch holds
    products of similar length (less padding), then shuffle the batches. Only
    full batches are used; the few products left over change every epoch.
    """
    rng = random.Random(f"{seed}:{epoch}")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    span = batch_size * pool
    for start in range(0, len(order) - batch_size + 1, span):
        chunk = sorted(order[start:start + span], key=lambda i: (lengths[i], i))
        for b in range(0, len(chunk) - batch_size + 1, batch_size):
            batches.append(chunk[b:b + batch_size])
    rng.shuffle(batches)
    return batches


def make_batch(sequences, indices):
    longest = max(len(sequences[i]) for i in indices)
    inputs = torch.zeros(len(indices), longest - 1, dtype=torch.long)
    targets = torch.full((len(indices), longest - 1), IGNORE, dtype=torch.long)
    for row, i in enumerate(indices):
        s = torch.tensor(sequences[i], dtype=torch.long)
        inputs[row, :len(s) - 1] = s[:-1]
        targets[row, :len(s) - 1] = s[1:]
    return inputs, targets


def loss_of(model, inputs, targets, reduction="mean"):
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE, reduction=reduction)


@torch.no_grad()
def evaluate(model, sequences, batch_size=64):
    """Mean next-token cross-entropy in nats/token over `sequences`."""
    model.eval()
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i]), i))
    total, count = 0.0, 0
    for start in range(0, len(order), batch_size):
        inputs, targets = make_batch(sequences, order[start:start + batch_size])
        total += float(loss_of(model, inputs, targets, reduction="sum"))
        count += int((targets != IGNORE).sum())
    model.train()
    return total / max(count, 1)


# ----------------------------------------------------------------------------
# optimisation


def make_optimizer(model, lr, weight_decay, embedding):
    decay, plain = [], []
    for p in model.parameters():
        # matrices of the linear layers decay; norms, biases and the (tied)
        # embedding do not
        (decay if p.dim() == 2 and p is not embedding else plain).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": plain, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


def learning_rate(step, steps, peak, warmup, floor=0.1):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def save_atomic(obj, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def write_loss_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["step", "seconds", "train_loss", "validation_loss"])
        for row in rows:
            w.writerow([row[0], f"{row[1]:.1f}", f"{row[2]:.5f}", f"{row[3]:.5f}"])


def plot(out):
    try:
        from training.plot_loss import plot_loss
        plot_loss(Path(out) / "loss.csv", Path(out) / "loss.png", title=PLOT_TITLE[0])
    except Exception as error:  # a plot must never stop training
        log("plot failed:", error)


# ----------------------------------------------------------------------------


def build_model(architecture, vocabulary_size, longest, intermediate_size):
    """(settings, model, embedding parameter) of a fresh model."""
    if architecture == "llama":
        settings = LlamaSettings(vocab_size=vocabulary_size, max_position_embeddings=longest,
                                 intermediate_size=intermediate_size)
        model = LlamaStoreModel(settings)
        return settings, model, model.model.embed_tokens.weight
    settings = Settings(vocabulary_size=vocabulary_size, longest=longest)
    model = StoreModel(settings)
    return settings, model, model.embedding.weight


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="models/store", help="folder with train.tsv, validation.tsv")
    p.add_argument("--out", default="models/store", help="tokenizer files, loss.csv, loss.png")
    p.add_argument("--checkpoints", default="/work/ckpt")
    p.add_argument("--architecture", choices=("store", "llama"), default="store",
                   help="store: StoreModel; llama: LlamaStoreModel (both tools/common/model.py)")
    p.add_argument("--intermediate-size", type=int, default=384,
                   help="SwiGLU width of the llama architecture")
    p.add_argument("--tokenizer", default=None,
                   help="folder with vocabulary.txt + merges.txt to use instead of learning them")
    p.add_argument("--vocabulary-size", type=int, default=2048)
    p.add_argument("--longest", type=int, default=160)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--batch-size", type=int, default=32, help="products per step")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--eval-products", type=int, default=1000,
                   help="validation products for the periodic evaluation (all at the end)")
    p.add_argument("--checkpoint-minutes", type=float, default=4.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="safety stop: end training when this much training time has passed "
                        "(the summary then records the steps actually done)")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--measure", type=float, default=0.0,
                   help="only measure seconds/step for this many seconds and exit")
    return p.parse_args(argv)


def tokenizer_for(args, out, train_products):
    """Step 1: the tokenizer given by --tokenizer, the one already in --out (when resuming or
    measuring), or one learned from the training split and saved to --out."""
    have_tokenizer = (out / "vocabulary.txt").exists() and (out / "merges.txt").exists()
    if args.tokenizer:
        tokenizer = Tokenizer.load(args.tokenizer)
        log(f"tokenizer loaded from {args.tokenizer}: vocabulary {len(tokenizer)}")
    elif args.resume and have_tokenizer or args.measure and have_tokenizer:
        tokenizer = Tokenizer.load(out)
        log(f"tokenizer loaded: vocabulary {len(tokenizer)}")
    else:
        started = time.time()
        texts = [t for product in train_products for t in product]
        tokenizer = Tokenizer.train(texts, args.vocabulary_size, log=log)
        tokenizer.save(out)
        log(f"tokenizer trained: vocabulary {len(tokenizer)}, merges {len(tokenizer.merges)}, "
            f"{time.time() - started:.1f} s")
    return tokenizer


class Batches:
    """The training batches by step: epoch_batches of the step's epoch (one epoch cached)."""

    def __init__(self, sequences, batch_size, seed):
        self.sequences, self.batch_size, self.seed = sequences, batch_size, seed
        self.lengths = [len(s) for s in sequences]
        self.per_epoch = len(sequences) // batch_size
        self.cache = {}

    def __call__(self, step):
        epoch, index = divmod(step, self.per_epoch)
        if epoch not in self.cache:
            self.cache.clear()
            self.cache[epoch] = epoch_batches(self.lengths, self.batch_size, self.seed, epoch)
        batches = self.cache[epoch]
        return make_batch(self.sequences, batches[index % len(batches)])


def measure(args, model, optimizer, batch_for, eval_seqs):
    """--measure: seconds per step over about args.measure seconds, and one evaluation's time."""
    begin, steps = time.time(), 0
    while time.time() - begin < args.measure:
        inputs, targets = batch_for(steps)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(steps, 1000, args.lr, args.warmup)
        loss = loss_of(model, inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        steps += 1
    per_step = (time.time() - begin) / steps
    log(f"measure: {steps} steps in {time.time() - begin:.1f} s = {per_step:.3f} s/step "
        f"at batch {args.batch_size}; {batch_for.per_epoch} steps/epoch; loss {float(loss):.3f}")
    eval_start = time.time()
    evaluate(model, eval_seqs)
    log(f"one evaluation of {len(eval_seqs)} products: {time.time() - eval_start:.1f} s")


class Training:
    """Step 2: the optimisation loop's state (step, loss rows, training seconds, tokens seen),
    resumable from and saved to the checkpoint --checkpoints/store.pt."""

    def __init__(self, args, model, optimizer, tokenizer, settings):
        self.args, self.model, self.optimizer = args, model, optimizer
        self.tokenizer, self.settings = tokenizer, settings
        self.checkpoint_path = Path(args.checkpoints) / "store.pt"
        self.step, self.rows, self.elapsed, self.tokens_seen = 0, [], 0.0, 0

    def resume(self):
        args = self.args
        if not self.checkpoint_path.exists():
            log("no checkpoint: starting from scratch")
            return
        state = torch.load(self.checkpoint_path)
        if state["vocabulary"] != self.tokenizer.vocabulary:
            raise SystemExit("checkpoint was trained with another vocabulary")
        if state.get("architecture", "store") != args.architecture:
            raise SystemExit(f"checkpoint holds a {state.get('architecture', 'store')} model, "
                             f"not {args.architecture}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.rows, self.elapsed = state["step"], state["rows"], state["elapsed"]
        self.tokens_seen = state["tokens_seen"]
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        log(f"resumed at step {self.step} ({self.elapsed:.0f} s trained)")

    def checkpoint(self):
        save_atomic({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                     "step": self.step, "rows": self.rows, "elapsed": self.elapsed,
                     "tokens_seen": self.tokens_seen, "torch_rng": torch.get_rng_state(),
                     "python_rng": random.getstate(), "vocabulary": self.tokenizer.vocabulary,
                     "settings": self.settings.to_dict(), "architecture": self.args.architecture,
                     "args": vars(self.args)}, self.checkpoint_path)

    def record(self, train_loss, validation, out):
        self.rows.append((self.step, self.elapsed, train_loss, validation))
        write_loss_csv(self.rows, out / "loss.csv")

    def optimise(self, inputs, targets, lr):
        """One AdamW step at learning rate lr; returns the batch's loss."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss = loss_of(self.model, inputs, targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
        self.optimizer.step()
        self.step += 1
        self.tokens_seen += int((targets != IGNORE).sum())
        return float(loss)

    def run(self, batch_for, eval_seqs, out):
        """Trains to --steps (or --max-minutes), evaluating every --eval-every steps and
        checkpointing every --checkpoint-minutes, then checkpoints once more."""
        args = self.args
        run_start = time.time()
        base_elapsed = self.elapsed
        last_checkpoint = time.time()
        running, running_count = 0.0, 0
        self.model.train()
        while self.step < args.steps:
            inputs, targets = batch_for(self.step)
            lr = learning_rate(self.step, args.steps, args.lr, args.warmup)
            running += self.optimise(inputs, targets, lr)
            running_count += 1
            self.elapsed = base_elapsed + time.time() - run_start
            if self.step % args.eval_every == 0 or self.step == args.steps:
                validation = evaluate(self.model, eval_seqs)
                train_loss = running / running_count
                running, running_count = 0.0, 0
                self.record(train_loss, validation, out)
                log(f"step {self.step}/{args.steps}  lr {lr:.2e}  train {train_loss:.4f}  "
                    f"validation {validation:.4f}  {self.elapsed:.0f} s  {self.tokens_seen} tokens")
            if args.max_minutes and self.elapsed > args.max_minutes * 60 and self.step < args.steps:
                validation = evaluate(self.model, eval_seqs)
                if running_count:
                    self.record(running / running_count, validation, out)
                log(f"time limit of {args.max_minutes} minutes reached at step {self.step}: stopping")
                break
            if time.time() - last_checkpoint > args.checkpoint_minutes * 60:
                self.checkpoint()
                plot(out)
                last_checkpoint = time.time()
                log(f"checkpoint at step {self.step}")
        self.checkpoint()

    def finish(self, data, out, train_products, validation_products, validation_seqs):
        """The final numbers over the whole validation split, final.pt, loss.csv and the plot."""
        args = self.args
        final_validation = evaluate(self.model, validation_seqs)
        final_train = self.rows[-1][2] if self.rows else float("nan")
        summary = {
            "architecture": args.architecture,
            "corpus": str(data),
            "training_products": len(train_products),
            "validation_products": len(validation_products),
            "seed": args.seed,
            "steps": self.step,
            "planned_steps": args.steps,
            "batch_size": args.batch_size,
            "learning_rate": args.lr,
            "warmup": args.warmup,
            "weight_decay": args.weight_decay,
            "tokens_seen": self.tokens_seen,
            "final_train_loss": round(final_train, 5),
            "final_validation_loss": round(final_validation, 5),
            "wall_seconds": round(self.elapsed, 1),
            "threads": args.threads,
            "torch_version": torch.__version__,
        }
        save_atomic({"model": self.model.state_dict(), "settings": self.settings.to_dict(),
                     "architecture": args.architecture,
                     "vocabulary": self.tokenizer.vocabulary, "summary": summary},
                    Path(args.checkpoints) / "final.pt")
        write_loss_csv(self.rows, out / "loss.csv")
        plot(out)
        log(f"done: {summary}")


def encode(tokenizer, train_products, validation_products, longest):
    """(training sequences, validation sequences), each product's ids cut to `longest`."""
    started = time.time()
    train_seqs = encode_split(tokenizer, train_products, longest)
    validation_seqs = encode_split(tokenizer, validation_products, longest)
    lengths = [len(s) for s in train_seqs]
    train_tokens = sum(l - 1 for l in lengths)
    log(f"encoded in {time.time() - started:.1f} s: {train_tokens} training targets, "
        f"mean length {sum(lengths) / len(lengths):.1f}, "
        f"{sum(l == longest for l in lengths)} truncated; "
        f"unknown ids in validation: {sum(s.count(tokenizer.unknown) for s in validation_seqs)}")
    return train_seqs, validation_seqs


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.architecture == "llama":
        PLOT_TITLE[0] = "store corpus, Llama architecture: next-token loss"
    torch.manual_seed(args.seed)
    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    train_products = read_products(data / "train.tsv")
    validation_products = read_products(data / "validation.tsv")
    log(f"corpus: {len(train_products)} training, {len(validation_products)} validation products")
    tokenizer = tokenizer_for(args, out, train_products)
    train_seqs, validation_seqs = encode(tokenizer, train_products, validation_products, args.longest)
    eval_seqs = validation_seqs[:args.eval_products]

    settings, model, embedding = build_model(args.architecture, len(tokenizer), args.longest,
                                             args.intermediate_size)
    optimizer = make_optimizer(model, args.lr, args.weight_decay, embedding)
    log(f"model: {args.architecture}, {sum(p.numel() for p in model.parameters())} parameters")
    batch_for = Batches(train_seqs, args.batch_size, args.seed)
    if args.measure:
        measure(args, model, optimizer, batch_for, eval_seqs)
        return 0

    training = Training(args, model, optimizer, tokenizer, settings)
    if args.resume:
        training.resume()
    training.run(batch_for, eval_seqs, out)
    training.finish(data, out, train_products, validation_products, validation_seqs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
