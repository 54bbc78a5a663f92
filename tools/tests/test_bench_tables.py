"""tools/benchmarks/bench_tables.py: the tables it composes from its runs' JSON, and the README block."""
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import bench_tables as bt  # noqa: E402


def gbench(entries):
    """A Google Benchmark JSON with a median aggregate (and a mean that must be ignored) per entry."""
    benchmarks = []
    for name, counters in entries.items():
        for aggregate, scale in (("mean", 0.5), ("median", 1.0)):
            benchmarks.append({"name": f"{name}/real_time_{aggregate}", "run_name": f"{name}/real_time",
                               "run_type": "aggregate", "aggregate_name": aggregate,
                               **{k: v * scale for k, v in counters.items()}})
    return {"benchmarks": benchmarks}


def harness_entry(model, dtype, systems):
    rows = []
    for system, (prefill, decode) in systems.items():
        for threads in (1, 2):
            rows.append({"system": system, "threads": threads, "load_average": 1.0,
                         "summary": {"peak_rss_mib": 500.0 + threads, "prefill_128_tokens_per_second": prefill * threads,
                                     "decode_128_ms_per_token": decode / threads}})
    return {"model": model, "dtype": dtype, "prefill": [128], "decode": [128], "rows": rows}


def test_medians_keep_the_median_aggregate_under_the_run_name():
    found = bt.medians(gbench({"fma_peak/threads:1": {"GFLOP/s": 100.0}}))
    assert found["fma_peak/threads:1"]["GFLOP/s"] == 100.0


def test_limits_give_each_product_its_share_of_the_same_process_peak():
    kernels = gbench({"fma_peak/threads:1": {"GFLOP/s": 200.0}, "fma_peak/threads:2": {"GFLOP/s": 400.0},
                      "from_memory/gpt2/up/float_panels/rows:128/pool_MiB:256": {"GFLOP/s": 170.0},
                      "from_memory/gpt2/up/bf16_panels/rows:1/pool_MiB:256": {"weights_GB/s": 9.0}})
    memory = gbench({"memory/read_streams:4/threads:1": {"bytes_read": 10e9},
                     "memory/read/threads:1": {"bytes_read": 8e9}})
    text = "\n".join(bt.limits_tables(kernels, memory))
    assert "| 1 | 200.0 | **10.0** | 8.0 | ? | 10.0 | ? | ? |" in text
    assert "| gpt2/up | 170.0, 85 % | not run |" in text
    assert "| gpt2/up | not run | 9.0, 90 % | not run |" in text


def test_headline_table_has_a_row_per_system_and_one_and_two_threads_in_a_cell():
    entries = [harness_entry("gpt2-small", "F32", {"attn": (700.0, 30.0), "llama.cpp": (300.0, 40.0)}),
               harness_entry("smollm2-135m", "BF16", {"attn, 16-bit weights": (600.0, 20.0)})]
    lines = bt.headline_table(entries)
    assert lines[0] == "| threads: 1 / 2 | prefill 128, tokens/s | decode at 128, ms/token |"
    assert "| attn, GPT-2 small F32 | 700 / 1,400 | 30.00 / 15.00 |" in lines
    assert "| llama.cpp (float32 cache) | 300 / 600 | 40.00 / 20.00 |" in lines
    assert "| attn, SmolLM2-135M BF16, 16-bit weights | 600 / 1,200 | 20.00 / 10.00 |" in lines


def test_ratios_are_attn_over_each_peer_ahead_above_one():
    entry = harness_entry("gpt2-small", "F32", {"attn": (600.0, 30.0), "llama.cpp": (300.0, 60.0)})
    (line,) = [x for x in bt.ratios_to_peers([entry]) if x]
    assert "1 thread: prefill 128 2.00×, decode @128 2.00×" in line


def test_a_whole_step_is_its_weights_bytes_over_its_time_against_the_same_thread_count_bandwidth():
    entry = harness_entry("gpt2-small", "F32", {"attn": (700.0, 40.0), "llama.cpp defaults": (300.0, 50.0),
                                                 "pytorch-eager": (800.0, 100.0)})
    for row in entry["rows"]:
        if row["system"] == "attn":
            row["raw"] = {"step_weights_bytes": 500e6}
    memory = gbench({"memory/read_streams:4/threads:1": {"bytes_read": 13e9},
                     "memory/read_streams:4/threads:2": {"bytes_read": 25e9}})
    lines = bt.step_bandwidth_table([entry], memory)
    # 500 MB in 40 ms: 12.5 GB/s of 13; in 20 ms on 2 threads: 25 GB/s of 25; PyTorch's rows left out
    # (a run that did not time the bandwidth beside its steps: against the limits, and says so)
    assert "| GPT-2 small F32, 500 MB | 1 | attn, GPT-2 small F32 | 40.00 ms, 12.5 GB/s, 96 % (limits) |" in lines
    assert "| GPT-2 small F32, 500 MB | 2 | attn, GPT-2 small F32 | 20.00 ms, 25.0 GB/s, 100 % (limits) |" in lines
    assert ("| GPT-2 small F32, 500 MB | 1 | llama.cpp defaults (float16 cache) | 50.00 ms, 10.0 GB/s, 77 % (limits) |"
            in lines)
    assert not [line for line in lines if "PyTorch" in line]
    # rows in order of threads within the model
    threads = [line.split(" | ")[1] for line in lines[2:] if line]
    assert threads == sorted(threads)
    # no bytes reported (an older run): no table
    for row in entry["rows"]:
        row.pop("raw", None)
    assert bt.step_bandwidth_table([entry], memory) == []


def test_a_step_timed_beside_its_read_bandwidth_is_a_share_of_that_not_of_the_limits():
    entry = harness_entry("gpt2-small", "F32", {"attn": (700.0, 40.0), "llama.cpp": (300.0, 50.0)})
    for row in entry["rows"]:
        if row["system"] == "attn":
            row["raw"] = {"step_weights_bytes": 500e6}
            # attn_bench_checkpoint --read-bandwidth 1: each repetition's own share, and the median read
            row["summary"].update({"decode_128_read_share": 0.93, "decode_128_read_gb_per_second": 14.0})
    memory = gbench({"memory/read_streams:4/threads:1": {"bytes_read": 20e9},
                     "memory/read_streams:4/threads:2": {"bytes_read": 40e9}})
    lines = bt.step_bandwidth_table([entry], memory)
    assert "| GPT-2 small F32, 500 MB | 1 | attn, GPT-2 small F32 | 40.00 ms, 12.5 GB/s, 93 % of 14.0 |" in lines
    # llama.cpp: 500 MB in 50 ms is 10 GB/s, over attn's 14.0 timed beside it, not the limits' 20
    assert "| GPT-2 small F32, 500 MB | 1 | llama.cpp (float32 cache) | 50.00 ms, 10.0 GB/s, 71 % of 14.0 |" in lines


def test_a_step_reads_its_cache_too_in_each_systems_storage():
    entry = harness_entry("gpt2-small", "F32", {"attn": (700.0, 40.0), "llama.cpp": (300.0, 50.0),
                                                 "llama.cpp defaults": (300.0, 50.0)})
    for row in entry["rows"]:
        if row["system"] == "attn":
            # 10 M numbers of keys and values a step at 128 cached, kept in float
            row["raw"] = {"step_weights_bytes": 460e6,
                          "decode": [{"context": 128, "cache_numbers_per_step": 10e6, "cache_bytes_per_step": 40e6}]}
    lines = bt.step_bandwidth_table([entry], {})
    # attn: 460 + 40 MB in 40 ms; llama.cpp's float32 cache the same 500 MB in 50 ms; its defaults' float16
    # cache 460 + 20 MB
    assert "| GPT-2 small F32, 460 MB | 1 | attn, GPT-2 small F32 | 40.00 ms, 12.5 GB/s, ? (limits) |" in lines
    assert "| GPT-2 small F32, 460 MB | 1 | llama.cpp (float32 cache) | 50.00 ms, 10.0 GB/s, ? (limits) |" in lines
    assert ("| GPT-2 small F32, 460 MB | 1 | llama.cpp defaults (float16 cache) | 50.00 ms, 9.6 GB/s, ? (limits) |"
            in lines)


def test_prefill_flops_count_every_layers_products_causal_attention_and_the_last_logits():
    # GPT-2 small: 7,077,888 weights a layer; 12 heads of 64; 768 × 50257 logits
    n = 128
    expected = 12 * (2 * n * 7_077_888 + 2 * 2 * 12 * 64 * n * (n + 1) // 2) + 2 * 768 * 50257
    assert bt.prefill_flops("gpt2-small", n) == expected
    # SmolLM2-135M: q 576, k and v 192 each, o 576 × 576, gated MLP of 1536 (3,538,944 weights a layer)
    assert bt.prefill_flops("smollm2-135m", 1) == 30 * (2 * 3_538_944 + 2 * 2 * 9 * 64) + 2 * 576 * 49152
    assert bt.prefill_flops("pythia-160m", 128) is None


def test_prefill_arithmetic_is_each_systems_gflops_against_the_same_thread_count_peak():
    entry = harness_entry("gpt2-small", "F32", {"attn": (500.0, 40.0), "pytorch-eager": (250.0, 100.0)})
    flops = bt.prefill_flops("gpt2-small", 128)
    kernels = gbench({"fma_peak/threads:1": {"GFLOP/s": flops * 500 / 128 / 1e9 * 2},  # attn at half of it
                      "fma_peak/threads:2": {"GFLOP/s": flops * 1000 / 128 / 1e9}})   # and all of it
    lines = bt.prefill_arithmetic_table([entry], kernels)
    gflops = flops * 500 / 128 / 1e9
    assert f"| GPT-2 small F32 | 1 | attn, GPT-2 small F32 | {gflops:.0f}, 50 % |" in lines
    assert f"| GPT-2 small F32 | 2 | attn, GPT-2 small F32 | {2 * gflops:.0f}, 100 % |" in lines
    assert f"| GPT-2 small F32 | 1 | PyTorch eager | {gflops / 2:.0f}, 25 % |" in lines
    assert lines[0].startswith("| model | threads | system | prefill 128: GFLOP/s, share of FMA peak |")
    # no peak measured, or a model of unknown shape: no table
    assert bt.prefill_arithmetic_table([entry], None) == []
    assert bt.prefill_arithmetic_table([harness_entry("pythia-160m", "F32", {"attn": (1.0, 1.0)})], kernels) == []


def test_readme_block_replaces_only_what_lies_between_the_markers():
    text = f"before\n{bt.README_BEGIN}\nold table\n{bt.README_END}\nafter\n"
    assert bt.replace_readme_block(text, "new") == f"before\n{bt.README_BEGIN}\nnew\n{bt.README_END}\nafter\n"
    with pytest.raises(ValueError):
        bt.replace_readme_block("no markers\n", "new")


def test_the_repository_readme_has_the_markers():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    bt.replace_readme_block(readme, "new")


def test_folder_readme_names_machine_commands_and_tables(tmp_path):
    (tmp_path / "real_size_f32.json").write_text(json.dumps(
        {"results": [harness_entry("gpt2-small", "F32", {"attn": (700.0, 30.0), "pytorch-eager": (800.0, 50.0)})]}))
    record = {"machine": {"model_name": "Intel(R) Xeon(R) Processor", "family": "6", "model": "167", "cpus": "2",
                          "isa": "AVX-512", "vector_extensions": ["avx512f"], "caches": {"L2 cache": "4 MiB"}},
              "arguments": ["--parts", "real_size"], "started": "2026-12-03 15:00 UTC", "ended": "2026-12-03 15:40 UTC",
              "commands": [{"command": "x", "started": "2026-12-03 15:00 UTC", "ended": "2026-12-03 15:40 UTC",
                            "load_before": 0.5, "load_after": 1.5}]}
    text = bt.folder_readme(tmp_path, record)
    assert "2-CPU Intel(R) Xeon(R) Processor (family 6, model 167; AVX-512; L2 cache 4 MiB)" in text
    assert "load 0.5 → 1.5" in text
    assert "| PyTorch eager | 800 / 1,600 | 50.00 / 25.00 |" in text
    block = bt.readme_block(tmp_path, record)
    assert "load 0.5–1.5" in block and "| attn, GPT-2 small F32 | 700 / 1,400 | 30.00 / 15.00 |" in block
    assert "rounds" not in block  # one round (or a run from before --rounds): plain medians
    entry = harness_entry("gpt2-small", "F32", {"attn": (700.0, 30.0)})
    entry["rounds"] = 3
    (tmp_path / "real_size_f32.json").write_text(json.dumps({"results": [entry]}))
    assert "medians over 3 rounds of every system in turn" in bt.readme_block(tmp_path, record)


def test_sight_gives_each_mode_its_ratio_to_the_plain_pass():
    sight = {"runs": [{"threads": 1, "sight": [{"positions": 2048, "plain": [10.0, 12.0, 11.0],
                                                 "statistics": [12.0, 13.2, 12.1], "log_sum_exp": [10.0, 12.0, 11.0]}]}]}
    lines = bt.sight_table(sight)
    assert "| 1 | 2,048 | 11.00 | 12.10 s, 1.10× | 11.00 s, 1.00× |" in lines


def test_the_8192_runs_decode_so_that_their_steps_end_at_the_context():
    assert len(bt.LONG_8192_RUNS) == 2
    for _, arguments in bt.LONG_8192_RUNS:
        decode = int(arguments[arguments.index("--decode") + 1])
        assert decode + bt.LONG_STEPS == 8192  # SmolLM2-135M's context: attn refuses a position past it


def test_resume_keeps_the_record_and_runs_only_the_parts_not_there(tmp_path, monkeypatch):
    machine = {"model_name": "AMD EPYC", "family": "26", "model": "2", "cpus": "2", "isa": "AVX-512",
               "vector_extensions": ["avx512f"], "caches": {}}
    earlier = {"machine": machine, "commit": "aaaa", "arguments": ["--parts", "long"], "started": "04:37",
               "commands": [{"command": "first", "started": "04:37", "ended": "04:53", "load_before": 1.0,
                             "load_after": 1.2}]}
    (tmp_path / "bench_tables.json").write_text(json.dumps(earlier))
    (tmp_path / "long_smollm2.json").write_text(json.dumps(
        {"results": [harness_entry("smollm2-135m", "F32", {"attn": (600.0, 27.0)})]}))
    ran = []

    def run(command, log, capture=False):
        ran.append([str(c) for c in command])
        log.append({"command": "second", "started": "05:22", "ended": "05:40", "load_before": 0.1, "load_after": 1.9})
        return ""

    monkeypatch.setattr(bt, "run", run)
    monkeypatch.setattr(sys, "argv", ["bench_tables.py", "--parts", "long", "--no-build", "--no-readme", "--resume",
                                      "--out", str(tmp_path)])
    bt.main()
    # long_smollm2.json was there; long_smollm2_bf16's and long_gpt2's were not
    assert len(ran) == 2 and "smollm2-135m:BF16" in ran[0] and "gpt2-small:F32" in ran[1]
    record = json.loads((tmp_path / "bench_tables.json").read_text())
    assert [c["command"] for c in record["commands"]] == ["first", "second", "second"]
    assert record["commit"] == "aaaa" and record["resumed"][0]["arguments"][-3:] == ["--resume", "--out", str(tmp_path)]
    readme = (tmp_path / "README.md").read_text()
    assert "attn at commit aaaa; resumed by `--parts long --no-build" in readme


def test_isa_avx2_runs_the_avx2_build_holds_the_peers_and_leaves_the_readme(tmp_path, monkeypatch):
    ran = []

    def run(command, log, capture=False):
        ran.append([str(c) for c in command])
        log.append({"command": "x", "started": "00:30", "ended": "00:40", "load_before": 1.0, "load_after": 1.1})
        return ""

    root = tmp_path / "root"
    root.mkdir()
    readme = f"# attn\n{bt.README_BEGIN}\nthe native table\n{bt.README_END}\n"
    (root / "README.md").write_text(readme)
    out = tmp_path / "tables"
    out.mkdir()
    (out / "real_size_f32.json").write_text(json.dumps(  # as if the harness had written it
        {"results": [harness_entry("gpt2-small", "F32", {"attn": (700.0, 30.0)})]}))
    monkeypatch.setattr(bt, "run", run)
    monkeypatch.setattr(bt, "ROOT", root)
    monkeypatch.setattr(sys, "argv", ["bench_tables.py", "--parts", "limits,real_size", "--isa", "avx2", "--out",
                                      str(out)])
    bt.main()
    assert ran[0] == ["cmake", "--preset", "bench-avx2"]  # no build/bench-avx2 there yet
    assert ran[1][:3] == ["cmake", "--build", "build/bench-avx2"]
    assert ran[2][0] == str(root / "build" / "bench-avx2" / "bench" / "attn_bench_kernels")
    harness = ran[3:]
    assert len(harness) == len(bt.REAL_SIZE_RUNS)
    assert all(c[c.index("--isa") + 1] == "avx2" for c in harness)
    record = json.loads((out / "bench_tables.json").read_text())
    assert record["machine"]["held_to"] == "AVX2" and "every system held to AVX2" in record["machine"]["isa"]
    assert "every system held to AVX2" in (out / "README.md").read_text()
    assert (root / "README.md").read_text() == readme  # the README's table is the machine's own ISA's


def test_the_native_run_keeps_the_native_build_and_names_no_held_isa():
    assert bt.bench_folder("native") == bt.ROOT / "build" / "bench" / "bench"
    assert "held_to" not in bt.machine()


def test_the_read_bandwidth_is_the_best_way_of_reading_it():
    memory = bt.medians(gbench({"memory/read_streams:4/threads:1": {"bytes_read": 26e9},
                                "memory/read_streams:2/threads:1": {"bytes_read": 38e9},
                                "memory/read/threads:1": {"bytes_read": 34e9},
                                "memory/read_streams:8/threads:2": {"bytes_read": 70e9}}))
    assert bt.read_bandwidth(memory, 1) == 38e9  # Zen 5's 512-bit loads: two runs, not four
    assert bt.read_bandwidth(memory, 2) == 70e9
    assert bt.read_bandwidth({}, 1) is None
    kernels = gbench({"from_memory/gpt2/up/float_panels/rows:1/pool_MiB:256": {"weights_GB/s": 19.0}})
    text = "\n".join(bt.limits_tables(kernels, gbench({"memory/read_streams:4/threads:1": {"bytes_read": 26e9},
                                                       "memory/read_streams:2/threads:1": {"bytes_read": 38e9}})))
    assert "| gpt2/up | 19.0, 50 % | not run | not run |" in text  # of 38, not of 26


def test_the_prefetched_way_counts_and_has_its_column():
    memory = gbench({"memory/read_streams:4/threads:1": {"bytes_read": 26e9},
                     "memory/read_streams:4/ahead:2048/threads:1": {"bytes_read": 35e9}})
    assert bt.read_bandwidth(bt.medians(memory), 1) == 35e9
    text = "\n".join(bt.limits_tables(gbench({}), memory))
    assert "four, prefetched" in text and "| 1 | ? | **35.0** | ? | ? | 26.0 | ? | 35.0 | ? |" in text


def test_the_limits_time_products_and_memory_in_one_process(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(bt, "run", lambda command, log, capture=False: ran.append([str(c) for c in command]))
    bt.run_limits(tmp_path, "native", [])
    assert len(ran) == 1 and ran[0][0].endswith("attn_bench_kernels")
    pattern = re.compile(next(a for a in ran[0] if a.startswith("--benchmark_filter="))[len("--benchmark_filter="):])
    for name in ("fma_peak/threads:1/real_time", "from_memory/gpt2/up/float_panels/rows:1/pool_MiB:256/real_time",
                 "memory/read_streams:4/ahead:2048/threads:2/real_time", "memory/read/threads:1/real_time",
                 "memory/copy/threads:1/real_time"):
        assert pattern.search(name), name
    assert not pattern.search("memory/read_streams:4/ahead:2048/threads:3/real_time")
    assert not pattern.search("from_memory/gpt2/up/float/rows:1/pool_MiB:256/real_time")


def test_a_folder_with_memory_inside_the_kernels_json_gets_its_limits(tmp_path):
    kernels = gbench({"fma_peak/threads:1": {"GFLOP/s": 100.0},
                      "from_memory/gpt2/up/float_panels/rows:1/pool_MiB:256": {"weights_GB/s": 30.0},
                      "memory/read_streams:4/ahead:2048/threads:1": {"bytes_read": 32e9}})
    (tmp_path / "limits_kernels.json").write_text(json.dumps(kernels))
    record = {"arguments": ["--parts", "limits"], "started": "x", "ended": "y", "commands": [],
              "machine": bt.machine()}
    text = bt.folder_readme(tmp_path, record)
    assert "**32.0**" in text and "| gpt2/up | 30.0, 94 %" in text
