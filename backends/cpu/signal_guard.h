#pragma once
// Holds back asynchronous signals (SIGINT, SIGTERM, SIGPROF, ...) on the calling thread while oneDNN runs.
//
// Why: oneDNN's JIT-generated f32 GEMM kernels (jit_avx512_common_gemm_f32, and the AVX2 one), in every
// release before the fix of March 2026 — Debian's 2.7 included — point RSP into a heap workspace while they
// run. A signal handled on that thread then writes its frame into the heap, and a later free() aborts with
// "corrupted size vs. prev_size" (oneDNN issue 4845, fixed by pull request 4855). ember-train handles
// SIGINT/SIGTERM to checkpoint and stop; a Ctrl-C during such a GEMM crashed it about one time in five.
// Blocked here, a signal goes to another thread of the process or waits (pending) until the guard ends, a
// few microseconds later; synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) stay unblocked.
// Cost: two pthread_sigmask calls (well under a microsecond) per oneDNN call of tens of microseconds or more.
#include <pthread.h>
#include <signal.h>

namespace ember::cpu {

class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked() { pthread_sigmask(SIG_BLOCK, &asynchronous(), &previous_); }
  ~AsyncSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  // Every signal but the synchronous faults, built once.
  static const sigset_t& asynchronous() {
    static const sigset_t set = [] {
      sigset_t s;
      sigfillset(&s);
      for (const int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&s, sync);
      return s;
    }();
    return set;
  }
  sigset_t previous_{};
};

}  // namespace ember::cpu
