"""A short libFuzzer run over bfdcap's reader, decoder, tracking and report writers, under ASan
and UBSan (tests/fuzz/fuzz_bfdcap.c, seeded from tests/fuzz/corpus/bfdcap). Longer runs:
    build/fuzz/fuzz_bfdcap -max_total_time=600 NEW_DIR tests/fuzz/corpus/bfdcap
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import ROOT

FUZZ_SECONDS = int(os.environ.get("BFDCAP_FUZZ_SECONDS", "20"))
TARGET = ROOT / "build" / "fuzz" / "fuzz_bfdcap"
SOURCES = sorted(p for p in (ROOT / "capture").glob("*.c") if p.name != "main.c")


def build() -> None:
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["clang", "-std=gnu11", "-O1", "-g", "-D_GNU_SOURCE",
           "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=undefined",
           f"-I{ROOT / 'bpf'}", f"-I{ROOT / 'capture'}", *map(str, SOURCES),
           str(ROOT / "tests" / "fuzz" / "fuzz_bfdcap.c"), "-lpcap", "-ljansson", "-lz", "-o", str(TARGET)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "fuzzer" in r.stderr and "cannot find" in r.stderr:
        pytest.skip("clang's libFuzzer runtime is missing (libclang-rt-14-dev)")
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang not installed")
def test_fuzz_short_run(tmp_path):
    build()
    corpus = ROOT / "tests" / "fuzz" / "corpus" / "bfdcap"
    assert len(list(corpus.iterdir())) >= 5
    new = tmp_path / "new"
    new.mkdir()
    r = subprocess.run([str(TARGET), f"-max_total_time={FUZZ_SECONDS}", "-rss_limit_mb=2048",
                        "-timeout=10", "-print_final_stats=1",
                        f"-artifact_prefix={tmp_path}/", str(new), str(corpus)],
                       capture_output=True, text=True, timeout=FUZZ_SECONDS + 120)
    crashes = [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "leak-",
                                                                         "timeout-", "oom-"))]
    assert r.returncode == 0 and not crashes, r.stderr[-4000:]
    runs = [ln for ln in r.stderr.splitlines() if ln.startswith("stat::number_of_executed_units")]
    assert runs and int(runs[0].split(":")[-1]) > 1000, r.stderr[-2000:]
