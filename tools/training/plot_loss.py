"""Plot models/store/loss.csv (train and validation loss, nats/token) to loss.png.

    python3 tools/training/plot_loss.py [--csv models/store/loss.csv] [--out models/store/loss.png]
"""

import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_loss(csv_path, png_path, title="store model: next-token loss"):
    steps, train, validation = [], [], []
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            steps.append(int(row["step"]))
            train.append(float(row["train_loss"]))
            validation.append(float(row["validation_loss"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot(steps, train, label="train (mean since previous point)", linewidth=1.5)
    ax.plot(steps, validation, label="validation (first 300 products)", linewidth=1.5)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", default="models/store/loss.csv")
    p.add_argument("--out", default="models/store/loss.png")
    args = p.parse_args(argv)
    plot_loss(args.csv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
