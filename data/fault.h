#pragma once
// Fault injection for the reliability tests (docs/reliability.md, tests/test_faults.cpp). The environment
// variable
//   EMBER_FAULT_INJECT=read:K          makes every read of example K of an IdxDataset fail;
//   EMBER_FAULT_INJECT=read:K@TEXT     only of an IdxDataset whose images file path contains TEXT
//                                      (e.g. read:250@train-images: the training split, not the test split)
// IdxDataset::get / get_batch then throw ember::Error "<images file>: example K could not be read (fault
// injected by EMBER_FAULT_INJECT=...)", as a record that cannot be read would in a dataset read lazily. The
// IDX datasets are read whole when they are built, so without it a real run cannot lose its data mid-epoch
// (deleting or truncating the file during the run changes nothing). The variable is read when a dataset is
// built; unset or empty, nothing changes (one integer comparison per example read).
#include <cstdint>
#include <string>

namespace ember::data {

// The example of the dataset read from `file` whose reads must fail, or -1. Throws ember::Error for a
// malformed EMBER_FAULT_INJECT (a typo must not silently disable the fault); logs a warning when armed.
int64_t injected_read_fault(const std::string& file);

// Throws the injected failure for example `index` of `file`.
[[noreturn]] void throw_injected_read_fault(const std::string& file, int64_t index);

}  // namespace ember::data
