// Open MPI's TCP eager limit, set in the environment before MPI_Init unless the user set it.
#include "comm/tcp_eager_limit.h"

#include <cstdlib>
#include <string>

namespace mpipe::comm {

void prefer_eager_tcp_messages() {
  const std::string bytes = std::to_string(kTcpEagerBytes);
  for (const char* name : {"OMPI_MCA_btl_tcp_eager_limit", "OMPI_MCA_btl_tcp_rndv_eager_limit",
                           "OMPI_MCA_btl_tcp_max_send_size"}) {
    setenv(name, bytes.c_str(), /*overwrite=*/0);
  }
}

}  // namespace mpipe::comm
