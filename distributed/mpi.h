#pragma once
// The MPI side of distributed/ (internal): the only file that includes <mpi.h> is mpi.cpp; a build without
// MPI links no_mpi.cpp instead, where built_with_mpi() is false and the rest throws.
#include <cstddef>
#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace ember::distributed::mpi {

bool built_with_mpi();
std::string version();  // "Open MPI v4.1.4, ..." (MPI_Get_library_version's first line)
// MPI_Init_thread (collectives come from the initialising thread; MPI_THREAD_MULTIPLE is asked for so that
// the collective watchdog's thread may abort the job), errors returned instead of aborting.
// Returns this process's rank and the world size as MPI sees them.
struct Rank {
  int rank = 0, size = 1;
};
Rank init();
bool initialized();
void finalize();
[[noreturn]] void abort(int code);
// CPU-tensor collectives on MPI_COMM_WORLD.
std::unique_ptr<Collectives> make_collectives(int rank, int world);
// Rank root's `bytes` to every rank (the NCCL unique id).
void broadcast_bytes(void* data, size_t bytes, int root);

}  // namespace ember::distributed::mpi
