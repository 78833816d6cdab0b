#!/usr/bin/env bash
# Packs, into .gpu/ (git-ignored), everything scripts/gpu_check.sh needs on a GPU machine that cannot build
# Ember (no Debian -dev packages there, no network): a Release CUDA build (sm_90, no -march=native, no
# oneDNN) of the apps and every test program with its CTest files, the shared libraries the image may
# lack, and Fashion-MNIST. One xz archive with a large dictionary: the test programs share most of their
# bytes. The device tool carries it (`carry: [".gpu"]`, 64 MiB at most).
#
#   scripts/gpu_bundle.sh        # here; then, through the device tool:  scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-gpu
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DEMBER_ONEDNN=OFF -DEMBER_NATIVE=OFF -DEMBER_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)"

rm -rf .gpu && mkdir -p .gpu/data
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
# The build tree's runnable parts, with the paths the CTest files and the tests' compiled-in paths use.
files=$(cd "$build" && find . -name 'CTestTestfile.cmake' -o -name '*_tests.cmake' -o -name '*_include.cmake' \
  -o -path './apps/ember-*' -type f -perm -u+x -o -path './tests/test_*' -type f -perm -u+x)
# Shared libraries that are not part of every Linux or of CUDA (cuBLAS and cuDNN come from the GPU
# machine's toolkit and PyTorch), and OpenBLAS, which Ember loads with dlopen.
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
for lib in $( (ldd "$build/apps/ember-train"; ldd "$build/tests/test_ops"; ldd "$openblas") | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*|libcublas*|libcudnn*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
cp -L "$openblas" "$stage/lib/libopenblas.so.0"
cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/
echo "$PWD" > .gpu/source_dir  # the absolute path compiled into the tests
(cd "$build" && tar -cf "$stage/build.tar" $files)
(cd "$stage" && tar -rf build.tar lib)  # unpacked into build-gpu/lib there
xz -T2 -9 --lzma2=dict=768MiB,preset=9 -c "$stage/build.tar" > .gpu/build.tar.xz
du -sh .gpu/build.tar.xz .gpu/data
total=$(du -sm .gpu | cut -f1)
[ "$total" -lt 62 ] || { echo "gpu_bundle: .gpu is ${total} MiB; the device tool carries at most 64 MiB" >&2; exit 1; }
echo "gpu_bundle: .gpu is ${total} MiB; run scripts/gpu_check.sh on the GPU machine with carry [\".gpu\"]"
