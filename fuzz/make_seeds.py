#!/usr/bin/env python3
"""Builds the small seed corpora in fuzz/seeds/<target>/ from the samples, the test
fixtures and both hostile folders (../shared/hostile, ../shared/hostile/turn3), so that a
fresh clone has them without ../shared. Seeds are cut small on purpose: the targets are
run with a small -max_len (fuzz/run.sh), and a seed longer than it would be cut anyway.

    python3 fuzz/make_seeds.py          # from the project root; rewrites fuzz/seeds/*
                                        # except pyrepr's hand-written seeds
"""
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "hostile"
OUT = ROOT / "fuzz" / "seeds"


def read(path, limit=1 << 20):
    """The first `limit` bytes of a file, decompressed when it is .gz or .zst."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path) as f:
                return f.read(limit)
        if path.suffix == ".zst":
            r = subprocess.run(["zstd", "-dc", str(path)], capture_output=True)
            return r.stdout[:limit]
        with open(path, "rb") as f:
            return f.read(limit)
    except (OSError, EOFError):
        return b""


def generated():
    """The small inputs turn3's generator makes (names with control characters, hostile
    pickles, CSVs and gzip/zstd oddities that are not stored): made into a temporary
    directory when ../shared is there."""
    gen = SHARED / "turn3" / "make_inputs.py"
    if not gen.is_file():
        return []
    tmp = Path(tempfile.mkdtemp(prefix="rankscope-seeds-"))
    TEMP.append(tmp)
    subprocess.run(["python3", str(gen), "small", str(tmp)], capture_output=True)
    return sorted(p for p in tmp.rglob("*") if p.is_file() and not p.is_symlink())


GENERATED = []
TEMP = []


def logs():
    pats = ["samples/*/*.log", "samples/*/stdout.txt", "tests/verdicts/**/*.log",
            "tests/fixtures/**/*.log", "tests/hostile/**/*.log*"]
    files = [p for pat in pats for p in sorted(ROOT.glob(pat))]
    if SHARED.is_dir():
        files += sorted(p for p in SHARED.rglob("*.log*") if p.is_file())
    files += [p for p in GENERATED if ".log" in p.name]
    return [f for f in files if f.is_file()]


def windows(data, size, count):
    """Up to `count` windows of whole lines, at most `size` bytes each, spread over the
    file; the first always (the detection and the first events are there)."""
    lines = data.splitlines(keepends=True)
    out, cur = [], b""
    for line in lines:
        if cur and len(cur) + len(line) > size:
            out.append(cur)
            cur = b""
        cur += line[:size]
    if cur:
        out.append(cur)
    if len(out) <= count:
        return out
    step = len(out) / count
    return [out[int(i * step)] for i in range(count)]


class Seeds:
    def __init__(self, target, budget):
        self.dir = OUT / target
        self.budget = budget
        self.used = 0
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)

    def add(self, data):
        if not data or self.used + len(data) > self.budget:
            return
        name = hashlib.sha1(data).hexdigest()[:16]
        path = self.dir / name
        if not path.exists():
            path.write_bytes(data)
            self.used += len(data)


CONFIG = re.compile(rb"server_args=|non-default args|Initializing a V\d+ LLM engine|"
                    rb"engine_args|EngineArgs\(|Args: |TorchDistributedArgs|model_config")


def main():
    GENERATED.extend(generated())
    scan = Seeds("scan", 600 << 10)
    prefix = Seeds("prefix", 300 << 10)
    config = Seeds("config", 300 << 10)
    for f in logs():
        data = read(f)
        for w in windows(data, 2048, 4):
            scan.add(w)
        for w in windows(data, 1024, 2):
            prefix.add(w)
        for line in data.splitlines():
            if CONFIG.search(line):
                config.add(line[:24 << 10])
    for f in sorted((ROOT / "fuzz" / "seeds" / "pyrepr").glob("*")):
        config.add(f.read_bytes())

    nvsmi = Seeds("nvsmi", 200 << 10)
    csvs = sorted(ROOT.glob("samples/*/*.csv")) + sorted(ROOT.glob("tests/**/*.csv"))
    csvs += [p for p in GENERATED if p.suffix == ".csv"]
    for f in csvs:
        for w in windows(read(f), 2048, 2):
            nvsmi.add(w)

    # Pickles: the small ones whole (the samples' are in the repository already and
    # fuzz/run.sh adds them; only what a fresh clone lacks is copied here).
    pickle = Seeds("pickle", 300 << 10)
    picks = []
    if SHARED.is_dir():
        picks += sorted(p for p in SHARED.rglob("*.pickle") if p.is_file())
    picks += [p for p in GENERATED if ".pickle" in p.name]
    for f in picks:
        data = read(f)
        if len(data) <= 64 << 10:
            pickle.add(data)

    # Grammars: the built-in ones cut into one grammar per event (with the file's head,
    # prefixes and config rules), so each seed compiles in milliseconds; the hostile ones.
    toml = Seeds("grammar_toml", 300 << 10)
    for f in sorted(ROOT.glob("grammars/*.toml")):
        text = f.read_bytes()
        parts = re.split(rb"(?m)^(?=\[\[)", text)
        head = [p for p in parts if not p.startswith(b"[[event]]") and not p.startswith(b"[[sample]]")]
        events = [p for p in parts if p.startswith(b"[[event]]")]
        for i, e in enumerate(events[:12]):
            toml.add(b"".join(head) + e)
    if SHARED.is_dir():
        for f in sorted(SHARED.rglob("*.toml")):
            toml.add(read(f))
    for f in GENERATED:
        if f.suffix == ".toml" and f.stat().st_size <= 16 << 10:
            toml.add(read(f))
    for s in [scan, prefix, config, nvsmi, pickle, toml]:
        n = len(list(s.dir.iterdir()))
        print(f"{s.dir.relative_to(ROOT)}: {n} seeds, {s.used} bytes")
    for tmp in TEMP:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
