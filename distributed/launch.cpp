#include "distributed/launch.h"

#include <cstdlib>
#include <string_view>

#include "base/error.h"

namespace ember::distributed {
namespace {

// The integer in variable `name`, or `fallback` when it is unset. Throws for anything but a number >= min.
int read_int(const GetEnv& getenv, const char* name, int fallback, int min) {
  const char* text = getenv(name);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  EMBER_CHECK(*text != '\0' && *end == '\0' && v >= min && v < (1L << 30), "distributed: the environment variable ",
              name, "='", text, "' is not a number >= ", min, "; the launcher (or you) set it wrong");
  return static_cast<int>(v);
}

struct Scheme {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;  // may be unset
  const char* local_size;  // nullable: not provided by this launcher
};

constexpr Scheme kSchemes[] = {
    {"EMBER_*", "EMBER_RANK", "EMBER_WORLD_SIZE", "EMBER_LOCAL_RANK", "EMBER_LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", nullptr},
};

}  // namespace

Launch detect_launch(const GetEnv& getenv) {
  for (const Scheme& s : kSchemes) {
    if (getenv(s.rank) == nullptr || getenv(s.size) == nullptr) continue;
    Launch l;
    l.launcher = s.launcher;
    l.world_size = read_int(getenv, s.size, 1, 1);
    l.rank = read_int(getenv, s.rank, 0, 0);
    EMBER_CHECK(l.rank < l.world_size, "distributed: ", s.rank, "=", l.rank, " is not below ", s.size, "=",
                l.world_size, "; ranks run from 0 to the world size - 1");
    l.local_rank = read_int(getenv, s.local_rank, 0, 0);
    l.local_world_size = s.local_size ? read_int(getenv, s.local_size, 1, 1) : 1;
    if (l.local_world_size <= l.local_rank) l.local_world_size = l.local_rank + 1;
    return l;
  }
  Launch none;
  none.launcher = "none";
  return none;
}

Launch detect_launch() {
  return detect_launch([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace ember::distributed
