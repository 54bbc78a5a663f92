#!/usr/bin/env python3
"""Writes tests/tokenizer_reference/corpus.jsonl: the lines on which the tokenizer tests
compare attn's ids with the JavaScript reference encoders (one JSON string per line, so a
line may hold newlines, carriage returns and control characters).

Categories: English prose (every non-empty line of the seeds, ../shared/seeds relative to
the repository, copied in so that the corpus stands alone), code, numbers, contractions,
runs of spaces, tabs and newlines, many scripts, emoji, combining marks, control characters
and random code points. Deterministic (fixed random seed).

Left out on purpose, because the references differ from the tokenizers they stand for:
  - U+0085 and U+FEFF: JavaScript's \\s has U+FEFF and lacks U+0085, the White_Space
    property (Hugging Face, Python's regex) is the other way round;
  - code points unassigned in this Python's Unicode version (the generated tables'), which
    Node's newer Unicode may call letters;
  - "<|endoftext|>": gpt-3-encoder splits it, attn (like Hugging Face) keeps it whole.

Run: /usr/bin/python3 tools/references/tokenizer_corpus.py [seeds directory]
"""

import argparse
import json
import random
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "tokenizer_reference" / "corpus.jsonl"
EXCLUDED = {0x85, 0xFEFF}


def allowed(ch):
    code = ord(ch)
    return code not in EXCLUDED and not 0xD800 <= code <= 0xDFFF and unicodedata.category(ch) != "Cn"


def clean(text):
    return "".join(c for c in text if allowed(c)).replace("<|endoftext|>", "<|endoftext |>")


WORDS = ("table chair sofa lamp desk shelf rug bed stool cabinet oak walnut teak linen velvet brass "
         "attention query key value head layer token model weight score mask softmax").split()
NAMES = "Ana Bob Chen Dmitri Élodie Fatima Giulia Hiro Ingrid José Kwame Lena".split()


def prose(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))).capitalize() + rng.choice(".!?;:,")


def code_line(rng):
    name = rng.choice(["x", "value", "tokens", "self.cache", "buf_2", "kTable", "__init__", "n_heads"])
    number = rng.choice(["0", "1", "42", "3.14", "1e-5", "0x1F", "255", "-7"])
    return rng.choice([
        f"for (int i = 0; i < {number}; ++i) {{ {name}[i] += i * 2; }}",
        f"def {name.replace('.', '_')}(a, b={number}):\n    return a + b  # sum",
        f"const {name.replace('.', '_')} = await fetch(`/api/v1/items?id=${{id}}&n={number}`);",
        f"if {name} != None and len({name}) >= {number}:\n\t\tprint(f\"{{{name}!r}}\")",
        f"std::vector<std::string> {name.replace('.', '_')}{{\"a\", \"b\"}}; // size {number}",
        f"$ grep -rn '{name}' src/ | awk -F: '{{print $1}}' | sort -u > /tmp/out.txt",
        f"SELECT id, name FROM products WHERE price > {number} ORDER BY name DESC;",
        f"<div class=\"row\" data-id=\"{number}\"><span>{name}</span></div>",
        f"{{\"key\": \"{name}\", \"value\": [{number}, null, true, false], \"nested\": {{}}}}",
        f"    {name} = lambda x: x ** 2 if x % 2 == 0 else -x  # {number}",
        f"#include <{name.replace('.', '/')}.hpp>\r\n#define MAX_{number.upper().replace('.', '_')} ({number})",
        f"fn main() -> Result<(), Box<dyn Error>> {{ let v: Vec<u8> = vec![{number}; 3]; Ok(()) }}",
        f"x={number};y=$((x<<2|0b101));echo \"${{y}}\"&&exit 0||:",
    ])


def number_line(rng):
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append(rng.choice([
            str(rng.randint(0, 10**rng.randint(1, 12))),
            f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}",
            f"{rng.randint(1, 999):,}".replace(",", rng.choice([",", ".", " ", "\u202f"])) + f"{rng.randint(0, 999):03d}",
            f"{rng.randint(1900, 2099)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            f"+1 ({rng.randint(200, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
            f"{rng.uniform(0, 100):.2e}", f"${rng.randint(1, 9999)}.{rng.randint(0, 99):02d}",
            f"{rng.randint(1, 99)}%", f"{rng.randint(1, 9)}½", "Ⅻ", "ⅷ", "²³", "①②③",
            "".join(chr(0xFF10 + rng.randint(0, 9)) for _ in range(rng.randint(1, 5))),
            "".join(chr(0x660 + rng.randint(0, 9)) for _ in range(rng.randint(1, 5))),
            "".join(chr(0x966 + rng.randint(0, 9)) for _ in range(rng.randint(1, 5))),
            "".join(rng.choice("0123456789") for _ in range(rng.randint(10, 40))),
            f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}", f"{rng.randint(1, 64)}x{rng.randint(1, 64)}",
        ]))
    return rng.choice([" ", "", "  ", ", ", "/"]).join(parts)


def contraction_line(rng):
    forms = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "’s", "’ll",
             "'", "''", "'x", "'sure", "'reed", "'dd", "'lll"]
    out = []
    for _ in range(rng.randint(2, 8)):
        word = rng.choice(WORDS + NAMES + ["I", "you", "they", "it", "don", "can", "won", "she", "we"])
        out.append(word + rng.choice(forms) + rng.choice(["", "", " ", "!", "?"]))
    return " ".join(out)


def whitespace_line(rng):
    pieces = []
    for _ in range(rng.randint(1, 10)):
        pieces.append(rng.choice(["", rng.choice(WORDS), rng.choice(WORDS).upper(), "42", ".", "—", "(x)"]))
        pieces.append("".join(rng.choice([" ", " ", " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2003", "\u3000",
                                          "\u2028", "\x0b", "\x0c", "\u205f"]) for _ in range(rng.randint(1, 7))))
    if rng.random() < 0.3:
        pieces.insert(0, " " * rng.randint(1, 5))
    return "".join(pieces)


SCRIPT_BLOCKS = [(0x00C0, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0530, 0x058F), (0x0590, 0x05FF),
                 (0x0600, 0x06FF), (0x0900, 0x097F), (0x0980, 0x09FF), (0x0B80, 0x0BFF), (0x0C00, 0x0C7F),
                 (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x0F00, 0x0FFF), (0x10A0, 0x10FF), (0x1100, 0x11FF),
                 (0x1200, 0x137F), (0x13A0, 0x13FF), (0x1780, 0x17FF), (0x1E00, 0x1EFF), (0x3040, 0x309F),
                 (0x30A0, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xA000, 0xA48F), (0x1D400, 0x1D7FF),
                 (0x20000, 0x2A6DF), (0x10330, 0x1034F), (0x1F100, 0x1F1FF)]


def script_word(rng, block):
    chars = [chr(rng.randint(*block)) for _ in range(rng.randint(1, 9))]
    return clean("".join(chars))


def script_line(rng):
    words = []
    for _ in range(rng.randint(1, 8)):
        word = script_word(rng, rng.choice(SCRIPT_BLOCKS))
        words.append(word + rng.choice(["", "", ",", ".", "。", "،", "!"]))
    return rng.choice([" ", " ", "", "  "]).join(words)


EMOJI = ["😀", "🤖", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "✔︎", "🧑🏿‍💻", "🐍", "☕", "⚡️", "🫠", "🥲", "🪑",
         "🛋️", "#️⃣", "1️⃣", "©️", "™", "🀄", "🂡", "🙋‍♀️"]


def emoji_line(rng):
    out = []
    for _ in range(rng.randint(1, 8)):
        out.append(rng.choice(EMOJI) * rng.randint(1, 3))
        out.append(rng.choice(["", " ", rng.choice(WORDS), " " + rng.choice(WORDS) + " ", "!"]))
    return "".join(out)


def combining_line(rng):
    out = []
    for _ in range(rng.randint(1, 8)):
        base = rng.choice("aeiouncAEIOUzqx" + "अकमদ" + "ㄱ" + "ก")
        marks = "".join(chr(rng.choice([rng.randint(0x300, 0x36F), rng.randint(0x1AB0, 0x1ABE),
                                         rng.randint(0x20D0, 0x20F0), 0x93F, 0x94D, 0x9BC, 0xE31, 0x302A]))
                        for _ in range(rng.randint(1, 4)))
        out.append(clean(base + marks) + rng.choice(["", " ", "  "]))
    if rng.random() < 0.3:
        out.insert(0, clean(chr(rng.randint(0x300, 0x36F))))  # a mark with no base
    return "".join(out)


def control_line(rng):
    controls = [chr(c) for c in list(range(0, 32)) + [0x7F] + list(range(0x80, 0xA0)) if c != 0x85]
    controls += ["\u200b", "\u200c", "\u200d", "\u200e", "\u2060", "\u00ad", "\ue000", "\U000F0000"]
    out = []
    for _ in range(rng.randint(1, 10)):
        out.append(rng.choice([rng.choice(controls), rng.choice(controls) * 3, rng.choice(WORDS), " ", "1"]))
    return "".join(out)


def random_line(rng):
    out = []
    while len(out) < rng.randint(1, 30):
        c = chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF),
                            rng.randint(0x10000, 0x10FFFF)]))
        if allowed(c):
            out.append(c)
    return "".join(out)


def long_line(rng):
    kind = rng.choice(["word", "repeat", "prose", "spaces"])
    n = rng.randint(500, 3000)
    if kind == "word":
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzé日") for _ in range(n))
    if kind == "repeat":
        return rng.choice("a.- 0é日😀") * n
    if kind == "spaces":
        return "x" + " " * n + "y" + "\t" * (n // 10) + "\n" * (n // 20) + "z"
    return " ".join(prose(rng) for _ in range(n // 40))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seeds", nargs="?", type=Path, default=ROOT.parent / "shared" / "seeds",
                        help="directory of *.txt seed prose (default: ../shared/seeds beside the repository)")
    seeds_dir = parser.parse_args().seeds
    lines = []
    for path in sorted(seeds_dir.glob("*.txt")):
        lines += [clean(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        sys.exit(f"no seed lines in {seeds_dir}")
    rng = random.Random(20240)
    plan = [(prose, 300), (code_line, 600), (number_line, 600), (contraction_line, 450), (whitespace_line, 600),
            (script_line, 900), (emoji_line, 400), (combining_line, 400), (control_line, 350), (random_line, 500),
            (long_line, 12)]
    for make, count in plan:
        lines += [clean(make(rng)) for _ in range(count)]
    lines += ["", " ", "\n", "\t", "'s", "a", "  a", "a  ", "\r\n\r\n", "é", "日本", "🤖"]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} lines to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
