#!/usr/bin/env python3
"""Installs the pinned llama.cpp peer into a cache outside the repository and builds its harness.

  /usr/bin/python3 tools/benchmarks/peers/llamacpp_setup.py [--cache ~/.cache/attn-peers]

  1. npm ci --ignore-scripts of tools/benchmarks/peers/package(-lock).json: node-llama-cpp@3.21.1 (whose
     llama/gitRelease.bundle is llama.cpp's source tree) and @node-llama-cpp/linux-x64@3.21.1
     (prebuilt CPU libllama, libggml, libggml-cpu-<microarchitecture>.so). The install scripts
     are skipped: they would download or build binaries, and nothing here runs node.
  2. git clone of the bundle; its one commit must be LLAMA_CPP_COMMIT (the bundle carries no tag:
     the release name v0.4.0 is in llama/llama.cpp.info.json and checked too).
  3. g++ -O2 of tools/benchmarks/peers/llama_peer.cpp against that tree's include/llama.h and ggml headers,
     linked to the prebuilt libraries (rpath to their folder), as llama_peer-<sha256 of the source, 12 hex>.
Prints the paths as JSON. Nothing is installed into the repository or the library's build.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
LLAMA_CPP_RELEASE = "v0.4.0"
LLAMA_CPP_COMMIT = "80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
LIBRARIES = ["libllama.v0.4.0.so", "libggml.v0.4.0.so", "libggml-base.so"]
DEFAULT_CACHE = Path.home() / ".cache" / "attn-peers"


@dataclass
class LlamaCpp:
    source: Path  # llama.cpp's tree: gguf-py/, include/llama.h, conversion/
    backends: Path  # the prebuilt libraries, for ggml_backend_load_all_from_path
    harness: Path  # the compiled tools/benchmarks/peers/llama_peer.cpp
    release: str
    commit: str


def run(command, **kwargs):
    return subprocess.run(command, check=True, text=True, capture_output=True, **kwargs).stdout


def install_packages(cache):
    npm_dir = cache / "npm"
    npm_dir.mkdir(parents=True, exist_ok=True)
    lock = (HERE / "package-lock.json").read_text(encoding="utf-8")
    installed = npm_dir / "installed-lock.json"
    if not (installed.is_file() and installed.read_text(encoding="utf-8") == lock):
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(HERE / name, npm_dir / name)
        run(["npm", "ci", "--ignore-scripts", "--omit=optional", "--no-audit", "--no-fund"], cwd=npm_dir)
        installed.write_text(lock, encoding="utf-8")
    return npm_dir / "node_modules"


def clone_source(cache, modules):
    info = json.loads((modules / "node-llama-cpp/llama/llama.cpp.info.json").read_text(encoding="utf-8"))
    if info.get("tag") != LLAMA_CPP_RELEASE:
        raise RuntimeError(f"node-llama-cpp bundles llama.cpp {info.get('tag')}, expected {LLAMA_CPP_RELEASE}")
    source = cache / f"llama.cpp-{LLAMA_CPP_COMMIT[:12]}"
    if not (source / "include" / "llama.h").is_file():
        shutil.rmtree(source, ignore_errors=True)
        run(["git", "clone", "--quiet", str(modules / "node-llama-cpp/llama/gitRelease.bundle"), str(source)])
    commit = run(["git", "-C", str(source), "rev-parse", "HEAD"]).strip()
    if commit != LLAMA_CPP_COMMIT:
        raise RuntimeError(f"{source}: llama.cpp commit {commit}, expected {LLAMA_CPP_COMMIT}")
    return source, commit


def harness_path(cache):
    """Where the harness of this checkout's llama_peer.cpp is built: named for the source's contents, so
    that checkouts sharing the cache (worktrees of several branches) each run the harness their own
    source describes, and none rebuilds another's in place."""
    digest = hashlib.sha256((HERE / "llama_peer.cpp").read_bytes()).hexdigest()[:12]
    return Path(cache) / f"llama_peer-{digest}"


def build_harness(cache, source, backends):
    code = HERE / "llama_peer.cpp"
    harness = harness_path(cache)
    if not harness.is_file():
        scratch = harness.with_name(f"{harness.name}.{os.getpid()}.tmp")
        run(["g++", "-O2", "-std=c++17", "-Wall", "-Wextra", f"-I{source / 'include'}",
             f"-I{source / 'ggml' / 'include'}", str(code), "-o", str(scratch), f"-L{backends}",
             *[f"-l:{name}" for name in LIBRARIES], f"-Wl,-rpath,{backends}"])
        scratch.replace(harness)  # atomic: a concurrent run sees the whole binary or none
    return harness


# The prebuilt CPU variant an instruction set stands for: llama.cpp loads the best variant this CPU runs
# among those in the folder it is given, so a folder holding one variant holds llama.cpp to its instructions
# (bench_llamacpp.py --isa). haswell: AVX2, FMA, F16C, BMI2, what an AVX2-only x86-64 CPU offers.
VARIANT_OF_ISA = {"avx2": "libggml-cpu-haswell.so"}


def held_to(llama, isa, cache=DEFAULT_CACHE):
    """llama with a backends folder (cache/backends-ISA) that holds only ISA's CPU variant; "native": llama."""
    if isa == "native":
        return llama
    variant = llama.backends / VARIANT_OF_ISA[isa]
    if not variant.is_file():
        raise FileNotFoundError(f"{variant}: the prebuilt package lacks llama.cpp's {isa} CPU variant")
    folder = Path(cache).expanduser().resolve() / f"backends-{isa}"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / variant.name
    if not (link.is_symlink() and link.resolve() == variant.resolve()):
        link.unlink(missing_ok=True)
        link.symlink_to(variant)
    return replace(llama, backends=folder)


def setup(cache=DEFAULT_CACHE):
    missing = [tool for tool in ("npm", "git", "g++") if shutil.which(tool) is None]
    if missing:
        raise FileNotFoundError(f"the llama.cpp peer needs {', '.join(missing)} on PATH (Debian: npm git g++)")
    cache = Path(cache).expanduser().resolve()
    modules = install_packages(cache)
    backends = modules / "@node-llama-cpp/linux-x64/bins/linux-x64"
    missing = [name for name in LIBRARIES if not (backends / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{backends}: the prebuilt package lacks {', '.join(missing)}")
    source, commit = clone_source(cache, modules)
    harness = build_harness(cache, source, backends)
    return LlamaCpp(source, backends, harness, LLAMA_CPP_RELEASE, commit)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    print(json.dumps({k: str(v) for k, v in asdict(setup(args.cache)).items()}, indent=2))


if __name__ == "__main__":
    main()
