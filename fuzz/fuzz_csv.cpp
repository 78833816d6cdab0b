// libFuzzer target for the CSV reader (data/csv.cpp): any file must load into a dataset or end in an
// ember::Error — never a crash or a sanitizer report. The reader takes a path, so each input is written
// to a file in /dev/shm (memory) first; the first input byte picks the options (header mode, target dtype).
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_csv
//   build-fuzz/fuzz/fuzz_csv -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/csv
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string path = "/dev/shm/ember_fuzz_csv_" + std::to_string(::getpid()) + ".csv";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  ember::data::CsvOptions o;
  o.header = static_cast<ember::data::CsvOptions::Header>(data[0] % 3);
  o.target_dtype = (data[0] / 3) % 2 == 0 ? ember::DType::i64 : ember::DType::f32;
  o.delimiter = (data[0] / 6) % 2 == 0 ? ',' : ';';
  try {
    ember::data::CsvDataset ds(path, o);
    if (ds.size() > 0) (void)ds.get(ds.size() - 1);
  } catch (const ember::Error&) {
  }
  return 0;
}
