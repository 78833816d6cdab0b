// distributed/mpi.h for a build without MPI: one process only.
#include <cstdlib>

#include "base/error.h"
#include "distributed/mpi.h"

namespace ember::distributed::mpi {
namespace {
constexpr const char* kMissing =
    "this build of Ember has no MPI; install Open MPI (apt-get install libopenmpi-dev openmpi-bin, or "
    "scripts/setup.sh) and rebuild — CMake finds it by itself";
}  // namespace

bool built_with_mpi() { return false; }
std::string version() { return "no MPI in this build"; }
Rank init() { detail::throw_error("distributed: ", kMissing); }
bool initialized() { return false; }
void finalize() {}
void abort(int code) { std::exit(code); }
std::unique_ptr<Collectives> make_collectives(int, int) { detail::throw_error("distributed: ", kMissing); }
void broadcast_bytes(void*, size_t, int) { detail::throw_error("distributed: ", kMissing); }

}  // namespace ember::distributed::mpi
