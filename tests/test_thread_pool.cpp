// The CPU backend's thread pool (base/parallel.h): every index exactly once, in any thread
// arrangement — nested loops, several user threads at once, threads marked serial — and the slot contract
// that per-thread scratch space relies on.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include <ember/ember.h>

#include "backends/cpu/openblas.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

// Counts how often each index of [0, n) is visited by parallel_for(n, grain).
std::vector<int> visits(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    EXPECT_LE(0, begin);
    EXPECT_LT(begin, end);
    EXPECT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) count[i].fetch_add(1, std::memory_order_relaxed);
  });
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (const int64_t n : {1, 2, 7, 64, 1000, 4097, 100003})
    for (const int64_t grain : {1, 3, 64, 32768}) {
      const std::vector<int> v = visits(n, grain);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 1) << "n " << n << " grain " << grain << " index " << i;
    }
}

TEST(ThreadPool, RangesRespectTheGrain) {
  std::atomic<int64_t> smallest{INT64_MAX};
  parallel_for(1000, 100, [&](int64_t begin, int64_t end) {
    int64_t cur = smallest.load();
    while (end - begin < cur && !smallest.compare_exchange_weak(cur, end - begin)) {
    }
  });
  EXPECT_GE(smallest.load(), 100);
}

TEST(ThreadPool, SlotsAreWithinTheThreadCount) {
  std::atomic<bool> ok{true};
  parallel_chunks(64, [&](int64_t) {
    const int s = thread_slot();
    if (s < 0 || s >= num_threads()) ok = false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
  EXPECT_TRUE(ok.load());
  EXPECT_EQ(thread_slot(), 0);  // outside a region
}

TEST(ThreadPool, NestedLoopsRunSeriallyInsideAndCoverEverything) {
  std::vector<std::atomic<int>> count(64 * 100);
  parallel_chunks(64, [&](int64_t outer) {
    EXPECT_FALSE(can_parallelize());  // inside a region
    parallel_for(100, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) count[outer * 100 + i].fetch_add(1);
    });
  });
  for (auto& c : count) ASSERT_EQ(c.load(), 1);
}

TEST(ThreadPool, SeveralUserThreadsAtOnce) {
  // Only one region holds the pool; the others run serially on their own thread. Either way each loop
  // covers its range exactly once.
  constexpr int kThreads = 4;
  std::vector<std::thread> users;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    users.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        const int64_t n = 1000 + 37 * t + rep;
        const std::vector<int> v = visits(n, 7);
        for (int x : v)
          if (x != 1) failures.fetch_add(1);
      }
    });
  for (auto& u : users) u.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, SerialThisThreadKeepsLoopsOnTheCallingThread) {
  std::thread worker([] {
    const SerialThisThread serial;
    EXPECT_FALSE(can_parallelize());
    const std::thread::id self = std::this_thread::get_id();
    std::atomic<bool> elsewhere{false};
    parallel_for(1 << 20, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != self) elsewhere = true;
    });
    EXPECT_FALSE(elsewhere.load());
  });
  worker.join();
  EXPECT_EQ(can_parallelize(), num_threads() > 1);  // the mark belonged to the other thread only
}

TEST(ThreadPool, ARegionDoesNotWaitForAChunkNobodyClaimed) {
  // One slow chunk among many: the region ends when the slow chunk ends, the others having been taken by the
  // remaining participants — not after slow chunk + everything queued behind it on one thread.
  if (num_threads() < 2) GTEST_SKIP() << "one thread: nothing runs alongside";
  const auto start = std::chrono::steady_clock::now();
  parallel_chunks(8, [&](int64_t c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(c == 0 ? 200 : 20));
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Serial would be 0.34 s; with the others claiming the seven short chunks meanwhile it is ~0.2 s.
  EXPECT_LT(s, 0.3) << "the seven 20 ms chunks were not taken by the other participants while one slept";
}

}  // namespace
}  // namespace ember::cpu

// OpenBLAS runs single-threaded inside the pool's chunks, called from several threads at once (its OpenMP
// build keys some buffers by the calling thread): GEMMs split by gemm() and many small GEMMs in parallel
// chunks must give the plain loop's results, repeatedly.
namespace ember::cpu {
namespace {

void naive(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(acc);
    }
}

std::vector<float> filled(int64_t count, int seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<float>(((i * 7919 + seed * 104729) % 1000) - 500) / 500.0f;
  return v;
}

TEST(ThreadPool, GemmsOnManyThreadsAtOnceMatchAPlainLoop) {
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{64, 256, 784}, {784, 256, 64}, {300, 45, 500}}) {
    const auto a = filled(m * k, 1), b = filled(k * n, 2);
    std::vector<float> want(m * n), got(m * n);
    naive(m, n, k, a.data(), b.data(), want.data());
    for (int rep = 0; rep < 20; ++rep) {
      gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, got.data(), n);
      for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(got[i], want[i], 1e-3) << m << "x" << n << "x" << k << " at " << i;
    }
  }
  // Many independent small GEMMs, one per chunk, on all threads at once.
  constexpr int64_t kCount = 64, M = 24, N = 40, K = 56;
  const auto a = filled(kCount * M * K, 3), b = filled(K * N, 4);
  std::vector<float> want(kCount * M * N), got(kCount * M * N);
  for (int64_t i = 0; i < kCount; ++i) naive(M, N, K, a.data() + i * M * K, b.data(), want.data() + i * M * N);
  for (int rep = 0; rep < 50; ++rep) {
    std::fill(got.begin(), got.end(), 0.0f);
    parallel_chunks(kCount, [&](int64_t i) {
      gemm<float>(false, false, M, N, K, 1.0f, a.data() + i * M * K, K, b.data(), N, 0.0f, got.data() + i * M * N, N);
    });
    for (int64_t i = 0; i < kCount * M * N; ++i) ASSERT_NEAR(got[i], want[i], 1e-3) << "rep " << rep << " at " << i;
  }
}

// f32 GEMMs go to oneDNN's sgemm when every dimension is large and to OpenBLAS otherwise (openblas.cpp): both
// sides of that line, every transpose, alpha and beta, padded leading dimensions, split across the pool and on
// the calling thread alone, against a double loop. (The split and the serial results may differ in the last
// bits — a chunk's kernels block K differently — as they do in OpenBLAS alone and in PyTorch.)
TEST(ThreadPool, EveryGemmFormMatchesDoubleSplitOrNot) {
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{64, 256, 784}, {256, 64, 96}, {64, 10, 128}, {10, 128, 64}}) {
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const auto& [alpha, beta] : {std::array<float, 2>{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}}) {
          const int64_t pad = 3, lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
          const auto a = filled((ta ? k : m) * lda, 5), b = filled((tb ? n : k) * ldb, 6), c0 = filled(m * ldc, 7);
          std::vector<float> split = c0, serial = c0;
          gemm<float>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, split.data(), ldc);
          {
            const SerialThisThread one_thread;
            gemm<float>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, serial.data(), ldc);
          }
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double acc = 0;
              for (int64_t p = 0; p < k; ++p)
                acc += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
              const double want = alpha * acc + beta * double(c0[i * ldc + j]);
              for (const float got : {split[i * ldc + j], serial[i * ldc + j]})
                ASSERT_NEAR(got, want, 1e-4 * (1 + std::abs(want))) << m << "x" << n << "x" << k << " ta " << ta
                                                                     << " tb " << tb << " alpha " << alpha << " at "
                                                                     << i << "," << j;
            }
          for (int64_t i = 0; i < m; ++i)  // the padding is left alone
            for (int64_t j = n; j < ldc; ++j) ASSERT_TRUE(split[i * ldc + j] == c0[i * ldc + j] && serial[i * ldc + j] == c0[i * ldc + j]);
        }
  }
}

// oneDNN's JIT GEMM kernels point RSP into the heap while they run (backends/cpu/signal_guard.h): a signal
// handled on that thread corrupted the heap (ember-train aborted on about one Ctrl-C in five). Signals aimed
// at the GEMM-running threads as fast as they can be sent, while GEMMs that take oneDNN run split across the
// pool; the heap must survive (glibc aborts on the corruption it finds when the buffers are freed).
std::atomic<int64_t> g_handled{0};
extern "C" void count_signal(int) { g_handled.fetch_add(1, std::memory_order_relaxed); }

TEST(ThreadPool, SignalsDuringGemmsLeaveTheHeapIntact) {
  struct sigaction sa {}, old {};
  sa.sa_handler = count_signal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  const int64_t m = 64, n = 256, k = 784;
  const auto a = filled(m * k, 8), b = filled(k * n, 9);
  std::vector<float> c(m * n);
  std::atomic<bool> done{false};
  const pthread_t target = pthread_self();
  std::thread sender([&] {
    while (!done.load()) {
      pthread_kill(target, SIGUSR1);
      ::kill(::getpid(), SIGUSR1);  // to any thread: the pool's workers too
      std::this_thread::sleep_for(std::chrono::microseconds(5));
    }
  });
  for (int rep = 0; rep < 2000; ++rep) {
    gemm<float>(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
    std::vector<float> churn(static_cast<size_t>(1000 + rep * 37));  // malloc and free across the heap
    churn[0] = c[rep % (m * n)];
  }
  done = true;
  sender.join();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_GT(g_handled.load(), 0) << "no signal was handled: the test did not test anything";
}

}  // namespace
}  // namespace ember::cpu

// oneDNN's convolutions are split by batch chunks across the pool (conv_onednn.cpp), the weight and bias
// gradients summed from per-chunk buffers: the f32 results (which go through oneDNN) must equal the f64 ones
// (which do not) for batches that split unevenly, and be the same on every run.
namespace ember {
namespace {

TEST(ThreadPool, ConvolutionSplitByBatchMatchesDouble) {
  namespace F = nn::functional;
  for (const int64_t batch : {1, 2, 13, 64}) {
    Generator gen(static_cast<uint64_t>(batch));
    const Tensor x64 = randn({batch, 3, 11, 9}, {.dtype = DType::f64}, &gen);
    const Tensor w64 = randn({8, 3, 3, 3}, {.dtype = DType::f64}, &gen);
    const Tensor b64 = randn({8}, {.dtype = DType::f64}, &gen);
    const Tensor r64 = randn({batch, 8, 6, 5}, {.dtype = DType::f64}, &gen);
    std::vector<std::vector<double>> first;
    for (int run = 0; run < 2; ++run) {
      std::vector<std::vector<double>> got[2];
      for (const DType dt : {DType::f64, DType::f32}) {
        Tensor x = x64.clone().to(dt), w = w64.clone().to(dt), b = b64.clone().to(dt);
        for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
        const Tensor y = F::conv2d(x, w, b, {.stride = 2, .padding = 1});
        (y * r64.to(dt)).sum().backward();
        for (const Tensor& t : {y, x.grad(), w.grad(), b.grad()})
          got[dt == DType::f32].push_back(t.to(DType::f64).contiguous().to_vector<double>());
      }
      for (size_t k = 0; k < got[0].size(); ++k) {
        ASSERT_EQ(got[0][k].size(), got[1][k].size());
        for (size_t i = 0; i < got[0][k].size(); ++i)
          ASSERT_NEAR(got[1][k][i], got[0][k][i], 1e-4 * (1 + std::abs(got[0][k][i])))
              << "batch " << batch << " tensor " << k << " element " << i;
      }
      if (run == 0) first = got[1];
      else EXPECT_EQ(got[1], first) << "batch " << batch << ": f32 results differ between two runs";
    }
  }
}

}  // namespace
}  // namespace ember
