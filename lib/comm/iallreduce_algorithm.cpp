// The MPI_Iallreduce algorithm: Open MPI's libnbc control variable, read and set through MPI_T.
#include "comm/iallreduce_algorithm.h"

#include <array>
#include <optional>
#include <string_view>

#include "comm/control_variable.h"

namespace mpipe::comm {
namespace {

constexpr char kVariable[] = "coll_libnbc_iallreduce_algorithm";
// The variable's values, in Open MPI 4.1's order (ompi_info --param coll libnbc --level 5).
constexpr std::array<std::string_view, 5> kAlgorithms{"ignore", "ring", "binomial", "rabenseifner",
                                                      "recursive_doubling"};
constexpr int kIgnore = 0;
constexpr int kRabenseifner = 3;

}  // namespace

void prefer_reduce_scatter_allgather() {
  ControlVariable variable(kVariable);
  // Every rank reads the same value (mpirun passes the user's MCA settings to all), so every rank
  // makes the same choice and their collectives match.
  if (variable.read() == kIgnore) variable.write(kRabenseifner);
}

std::string iallreduce_algorithm() {
  const std::optional<long long> value = ControlVariable(kVariable).read();
  if (!value || *value < 0 || *value >= static_cast<long long>(kAlgorithms.size()))
    return "unknown";
  return std::string(kAlgorithms[static_cast<size_t>(*value)]);
}

}  // namespace mpipe::comm
