// A checkpoint's weights through a temporary exported file.
#include "checkpoint/checkpoint_weights.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "checkpoint/checkpoint_export.h"
#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

// A new empty file in the temporary folder, removed when this goes.
class TemporaryFile {
 public:
  TemporaryFile() : path_((fs::temp_directory_path() / "mpipe-weights-XXXXXX").string()) {
    const int fd = mkstemp(path_.data());
    check(fd >= 0, "{}: cannot create a temporary file: {}", path_, std::strerror(errno));
    ::close(fd);
  }
  ~TemporaryFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

CheckpointWeights read_checkpoint_weights(const std::string& run_dir,
                                          const ModelCheck& check_model) {
  const TemporaryFile file;
  const CheckpointExport done = export_checkpoint(run_dir, std::nullopt, file.path(), check_model);
  return {.step = done.step, .tensors = read_safetensors(file.path()).tensors};
}

}  // namespace mpipe::checkpoint
