#pragma once
// Who this process is in a multi-process job, read from the launcher's environment. First match wins:
//   EMBER_RANK, EMBER_WORLD_SIZE [, EMBER_LOCAL_RANK]              explicit (checks or overrides below)
//   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE         Open MPI's mpirun
//   PMI_RANK, PMI_SIZE [, MPI_LOCALRANKID]                       PMI launchers (MPICH's hydra, Intel MPI)
//   SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID            srun (a job step; a batch script's own
//                                                                shell has no SLURM_STEP_NUM_TASKS, so it is
//                                                                one process, not the job's ntasks)
// Nothing set: one process (rank 0 of 1).
#include <functional>
#include <string>

namespace ember::distributed {

struct Launch {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // among the processes on this machine: which GPU to use
  int local_world_size = 1;
  std::string launcher;      // "none", "EMBER_*", "Open MPI", "PMI", "Slurm": what the numbers came from
  bool from_launcher() const { return launcher != "none"; }
};

using GetEnv = std::function<const char*(const char*)>;

// Throws ember::Error for values that are not numbers or out of range (rank >= world size), naming the
// variable and its value.
Launch detect_launch(const GetEnv& getenv);
Launch detect_launch();  // from this process's environment

}  // namespace ember::distributed
