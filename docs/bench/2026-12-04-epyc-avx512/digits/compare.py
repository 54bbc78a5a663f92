"""The digits' products against the float path's, from memory, one thread: medians over the rounds
of each run's median (base_<round>.json, final3_<round>.json), weights per second and the blocks'
bytes per second against the same rounds' memory/read (attn_bench_cache).

    python3 compare.py
"""
import json
import pathlib
import statistics

HERE = pathlib.Path(__file__).parent


def medians(prefix, counter):
    runs = {}
    for path in sorted(HERE.glob(f"{prefix}_*.json")):
        for b in json.loads(path.read_text())["benchmarks"]:
            if b.get("aggregate_name") == "median" and counter in b:
                runs.setdefault(b["run_name"], []).append(b[counter])
    return {name: statistics.median(values) for name, values in runs.items()}


base, digits = medians("base", "GFLOP/s"), medians("final3", "GFLOP/s")
bytes_per_second = medians("final3", "weights_GB/s")
read = medians("memory", "bytes_read")
read_1 = read["memory/read/threads:1/real_time"] * 1e-9
print(f"memory/read, one thread: {read_1:.1f} GB/s (median of the rounds)")
print("| product | format | float path, G weights/s | digits | digits/float | digits, GB/s of blocks | of memory/read |")
print("|---|---|---:|---:|---:|---:|---:|")
for name in base:
    if "from_memory" not in name:
        continue
    parts = name.split("/")
    product, fmt = parts[1] + "/" + parts[2], parts[3]
    print(f"| {product} | {fmt} | {base[name] / 2:.1f} | {digits[name] / 2:.1f} | {digits[name] / base[name]:.2f}× "
          f"| {bytes_per_second[name]:.1f} | {100 * bytes_per_second[name] / read_1:.0f} % |")
