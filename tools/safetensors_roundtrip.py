#!/usr/bin/python3
"""Ember → PyTorch → Ember through safetensors files, where Python, torch and safetensors are available:

    /usr/bin/python3 tools/safetensors_roundtrip.py build/tests/test_safetensors

1. the Ember test writes a file; 2. torch (safetensors.torch.load_file) reads it and checks the values;
3. torch writes a file from them; 4. the Ember test reads it and checks the values.
"""
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

test_binary = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    ember_file, torch_file = os.path.join(tmp, "ember.safetensors"), os.path.join(tmp, "torch.safetensors")
    run = lambda env: subprocess.run([test_binary, "--gtest_filter=SafeTensors.PythonRoundTrip"],
                                     env={**os.environ, **env}, check=True, capture_output=True, text=True)
    run({"EMBER_SAFETENSORS_OUT": ember_file})
    t = load_file(ember_file)
    assert torch.equal(t["w"], torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.5), t["w"]
    assert torch.equal(t["idx"], torch.arange(5) - 2), t["idx"]
    save_file({"w_times_two": (t["w"] * 2).flatten().contiguous(), "idx": t["idx"]}, torch_file,
              metadata={"writer": "python"})
    result = run({"EMBER_SAFETENSORS_IN": torch_file})
    assert "[  PASSED  ] 1 test" in result.stdout, result.stdout
print("safetensors round trip Ember -> torch -> Ember: OK")
