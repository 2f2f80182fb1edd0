"""host_memory: glibc's thresholds raised once at import, an opt-out, and a clear error for a bad setting."""

import os
import subprocess
import sys

import pytest

from cupynet import host_memory


def test_a_bad_setting_names_the_variable_and_the_choices():
    with pytest.raises(ValueError, match="CUPYNET_HOST_MALLOC must be 'tuned' or 'default', got 'fast'"):
        host_memory.tune({"CUPYNET_HOST_MALLOC": "fast"})


def test_default_leaves_glibc_alone_and_says_so():
    before = host_memory.state()
    assert host_memory.tune({"CUPYNET_HOST_MALLOC": "default"}) is False
    assert host_memory.state() == {"tuned": False, "reason": "CUPYNET_HOST_MALLOC=default"}
    host_memory._state.update(before)


@pytest.mark.skipif(host_memory._glibc() is None, reason="the thresholds are glibc's; this C library has none")
def test_a_repeated_large_allocation_reuses_mapped_pages_after_import():
    # NOTE: run in a fresh interpreter. A 40 MiB array is above glibc's largest automatic mmap threshold
    # (32 MiB on 64-bit), so untuned each one is a fresh mapping that faults in at least 20 pages (2 MiB
    # transparent huge pages; 10,240 with 4 KiB pages): 10 of them >= 200 faults. Tuned (256 MiB threshold,
    # 1 GiB trim threshold) the freed block stays on the heap and is reused: a handful at most.
    code = (
        "import resource, numpy as np, cupynet\n"
        "a = np.ones(10 << 20, np.float32); del a\n"
        "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(10):\n"
        "    a = np.ones(10 << 20, np.float32); del a\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)\n")
    env = {k: v for k, v in os.environ.items() if k != "CUPYNET_HOST_MALLOC"}  # NOTE: the import's own default
    tuned = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env=env).stdout)
    assert tuned < 100, f"{tuned} page faults for 10 reused 40 MiB arrays (10 fresh ones are at least 200)"


def test_import_tuned_the_thresholds_on_glibc():
    code = "import cupynet; print(cupynet.host_memory.state())"
    env = {k: v for k, v in os.environ.items() if k != "CUPYNET_HOST_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    expected = {"tuned": True, "reason": "mallopt"} if host_memory._glibc() else {"tuned": False, "reason": "not glibc"}
    assert out.strip() == repr(expected)
