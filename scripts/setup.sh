#!/usr/bin/env bash
# Installs, with apt-get, whatever Ember needs that this Debian machine lacks. Safe to rerun: it installs
# nothing when everything is present. The CUDA toolkit and cuDNN are not Debian packages: when present
# (/usr/local/cuda) the build uses them, otherwise it builds CPU-only.
set -euo pipefail

packages=(
  cmake g++ make ccache pkg-config
  libspdlog-dev libfmt-dev      # logging
  libyaml-cpp-dev libcli11-dev  # the apps: configs and command lines
  nlohmann-json3-dev            # safetensors headers
  zlib1g-dev                    # gzip'd IDX datasets
  libopenblas0-openmp           # GEMM, the OpenMP build (one thread pool with Ember's)
  libdnnl-dev                   # oneDNN: CPU convolution (also OpenMP)
  libgtest-dev libbenchmark-dev # tests and microbenchmarks
  cppcheck clang-tidy           # static analysis (scripts/lint.sh)
  clang libclang-rt-dev libomp-dev  # the fuzz targets (scripts/fuzz.sh): libFuzzer's runtime, clang's OpenMP
  libopenmpi-dev openmpi-bin    # multi-process training (distributed/) and its mpirun tests
  libprotobuf-dev protobuf-compiler  # TensorBoard event files (the project's own .proto)
  libonnx-dev                   # ONNX export: the ONNX protobuf schema and its checker
  libturbojpeg0-dev libpng-dev  # image folders: JPEG and PNG decoding
  libsentencepiece-dev          # subword tokenizers for language models (SentencePiece BPE and unigram)
  chromium                      # the run report's test renders it headless
  python3-venv                  # scripts/test_venv.sh: TensorBoard's reader and onnxruntime for the tests
  dataset-fashion-mnist         # the default training data (/usr/share/datasets/fashion-mnist)
  fortunes                      # the default text for language models (/usr/share/games/fortunes)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all dependencies present"
fi
