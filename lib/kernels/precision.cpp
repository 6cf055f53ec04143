// Precision names and the /proc/cpuinfo flag check for bf16.
#include "kernels/precision.h"

#include <fstream>
#include <sstream>

namespace mpipe::kernels {
namespace {

// Whether any "flags" line of `cpuinfo` lists `flag` as a whole word.
bool has_flag(std::string_view cpuinfo, std::string_view flag) {
  std::istringstream lines{std::string(cpuinfo)};
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("flags")) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::string word;
    while (words >> word) {
      if (word == flag) return true;
    }
  }
  return false;
}

}  // namespace

std::string to_string(Precision precision) {
  return std::string(name_of(kPrecisionNames, precision));
}

std::optional<std::string> missing_cpu_flag(Precision precision, std::string_view cpuinfo) {
  if (precision == Precision::kF32) return std::nullopt;
  if (has_flag(cpuinfo, "avx512_bf16")) return std::nullopt;
  return "avx512_bf16";
}

std::string read_cpuinfo() {
  std::ifstream file("/proc/cpuinfo");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace mpipe::kernels
