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
    # NOTE: run in a fresh interpreter: with glibc's defaults a freed 8 MiB array goes back to the kernel
    # (munmap) and the next one faults in ~2,000 fresh pages; tuned, the pages stay mapped and are reused
    code = (
        "import resource, numpy as np, cupynet\n"
        "a = np.ones(1 << 21, np.float32); del a\n"
        "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(20):\n"
        "    a = np.ones(1 << 21, np.float32); del a\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)\n")
    tuned = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    default = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 env={**os.environ, "CUPYNET_HOST_MALLOC": "default"}).stdout)
    assert tuned < 200, f"{tuned} page faults for 20 reused 8 MiB arrays"
    assert default > 10 * max(tuned, 1), (tuned, default)


def test_import_tuned_the_thresholds_on_glibc():
    code = "import cupynet; print(cupynet.host_memory.state())"
    env = {k: v for k, v in os.environ.items() if k != "CUPYNET_HOST_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    expected = {"tuned": True, "reason": "mallopt"} if host_memory._glibc() else {"tuned": False, "reason": "not glibc"}
    assert out.strip() == repr(expected)
