#!/usr/bin/env python3
"""Reads a run directory's TensorBoard event files with TensorBoard's own reader and prints what it holds
as one JSON object, for tests/test_tensorboard.cpp:

  {"files": N, "records": N,
   "scalars":    {tag: [[step, value], ...]},
   "histograms": {tag: [{"step": s, "min": .., "max": .., "num": .., "sum": .., "sum_squares": ..,
                         "bucket_limit": [..], "bucket": [..]}, ...]},
   "texts":      {tag: [[step, text], ...]}}

First every record of every events file is read with TensorBoard's record reader, which checks both
masked CRC-32Cs of each record and fails on a bad one (EventAccumulator would only log it and skip the
rest of the file). Then the directory is loaded with EventAccumulator, keeping every event
(size_guidance 0) and applying SessionLog START purges, as TensorBoard's scalar dashboard shows the run.
Non-finite values are written as the strings "NaN", "Infinity", "-Infinity" (JSON has no literal for them).
Usage: .venv-test/bin/python tools/read_tensorboard.py RUN_DIR
"""
import glob
import json
import math
import os
import sys

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.compat.tensorflow_stub.errors import OutOfRangeError


def number(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def main(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    records = 0
    for path in files:
        reader = pywrap_tensorflow.PyRecordReader_New(path)
        first = True
        while True:
            try:
                reader.GetNext()  # raises DataLossError on a CRC mismatch or a truncated record
            except OutOfRangeError:
                break
            event = event_pb2.Event.FromString(reader.record())
            if first and event.file_version != "brain.Event:2":
                sys.exit(f"{path}: the first record is not the file_version event brain.Event:2: {event}")
            first = False
            records += 1
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    out = {"files": len(files), "records": records, "scalars": {}, "histograms": {}, "texts": {}}
    for tag in tags[ea.SCALARS]:
        out["scalars"][tag] = [[e.step, number(e.value)] for e in acc.Scalars(tag)]
    for tag in tags[ea.HISTOGRAMS]:
        out["histograms"][tag] = [
            {"step": e.step, "min": number(h.min), "max": number(h.max), "num": h.num, "sum": number(h.sum),
             "sum_squares": number(h.sum_squares), "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)}
            for e in acc.Histograms(tag) for h in [e.histogram_value]]
    for tag in tags[ea.TENSORS]:
        texts = []
        for e in acc.Tensors(tag):
            if e.tensor_proto.dtype != 7:  # DT_STRING
                sys.exit(f"tensor {tag} at step {e.step} is not a DT_STRING tensor")
            texts.append([e.step, e.tensor_proto.string_val[0].decode("utf-8")])
        out["texts"][tag] = texts
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: read_tensorboard.py RUN_DIR")
    main(sys.argv[1])
