// Safetensors writer and validating reader (F32; U8 and I64 too for stored tensors read as they
// are), built on nlohmann-json for the header.
#include "checkpoint/safetensors.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this build writes host order");

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the limit the reference implementation uses
constexpr uint64_t kBytesPerValue = sizeof(float);
constexpr const char* kMetadataKey = "__metadata__";

// A dtype a reader accepts, and the bytes of one value of it.
struct Dtype {
  std::string_view name;
  uint64_t bytes;
};
constexpr std::array<Dtype, 1> kFloatOnly = {{{"F32", 4}}};
constexpr std::array<Dtype, 3> kStoredDtypes = {{{"F32", 4}, {"U8", 1}, {"I64", 8}}};

// "F32" or "F32, U8 or I64".
std::string dtype_list(std::span<const Dtype> dtypes) {
  std::string text;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) text += i + 1 == dtypes.size() ? " or " : ", ";
    text += dtypes[i].name;
  }
  return text;
}

// One tensor's entry in the header, validated.
struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string dtype = "F32";
};

void check_names(const std::string& path, const std::vector<TensorInfo>& layout) {
  std::set<std::string> names;
  for (const TensorInfo& t : layout) {
    check(!t.name.empty() && t.name != kMetadataKey, "{}: invalid tensor name '{}'", path, t.name);
    check(names.insert(t.name).second, "{}: duplicate tensor name '{}'", path, t.name);
    for (int64_t d : t.shape.dims()) {
      check(d >= 0, "{}: tensor '{}' has negative dimension in {}", path, t.name, t.shape);
    }
  }
}

void check_size(const std::string& path, const TensorInfo& tensor, size_t num_values) {
  check(static_cast<int64_t>(num_values) == tensor.shape.numel(),
        "{}: tensor '{}' has {} values, shape {} needs {}", path, tensor.name, num_values,
        tensor.shape, tensor.shape.numel());
}

// The JSON header, padded with spaces to a multiple of 8 bytes.
std::string make_header(const std::vector<TensorInfo>& layout,
                        const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const TensorInfo& t : layout) {
    const uint64_t bytes = static_cast<uint64_t>(t.shape.numel()) * kBytesPerValue;
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape.dims()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// Reads exactly `bytes` bytes at `offset` into `out`.
void read_at(const RegularFile& in, uint64_t offset, void* out, uint64_t bytes) {
  const size_t got =
      in.read_at(offset, std::span(static_cast<std::byte*>(out), static_cast<size_t>(bytes)));
  check_input(got == bytes, "{}: read failed at byte {}", in.path(), offset);
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  check_input(value.is_object(), "{}: {} must be an object of strings", path, kMetadataKey);
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    check_input(item.is_string(), "{}: {}.{}: value must be a string", path, kMetadataKey, key);
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

Entry parse_entry(const std::string& path, const std::string& name, const json& value,
                  std::span<const Dtype> dtypes) {
  check_input(value.is_object(), "{}: tensor '{}': entry must be an object", path, name);
  const auto dtype = value.find("dtype");
  check_input(dtype != value.end() && dtype->is_string(), "{}: tensor '{}': missing dtype", path,
              name);
  const auto known =
      std::find_if(dtypes.begin(), dtypes.end(), [&](const Dtype& d) { return *dtype == d.name; });
  check_input(known != dtypes.end(), "{}: tensor '{}': dtype {} is not supported (only {})", path,
              name, dtype->get<std::string>(), dtype_list(dtypes));
  const uint64_t value_bytes = known->bytes;

  const auto shape = value.find("shape");
  check_input(shape != value.end() && shape->is_array(),
              "{}: tensor '{}': shape must be an array of non-negative integers", path, name);
  std::vector<int64_t> dims;
  uint64_t numel = 1;
  for (const json& d : *shape) {
    check_input(d.is_number_unsigned(),
                "{}: tensor '{}': shape must be an array of non-negative integers", path, name);
    const uint64_t dim = d.get<uint64_t>();
    check_input(!__builtin_mul_overflow(numel, dim, &numel) && numel <= (1ull << 60),
                "{}: tensor '{}': shape is too large", path, name);
    dims.push_back(static_cast<int64_t>(dim));
  }

  const auto offsets = value.find("data_offsets");
  const bool offsets_ok = offsets != value.end() && offsets->is_array() && offsets->size() == 2 &&
                          (*offsets)[0].is_number_unsigned() &&
                          (*offsets)[1].is_number_unsigned() &&
                          (*offsets)[0].get<uint64_t>() <= (*offsets)[1].get<uint64_t>();
  check_input(offsets_ok, "{}: tensor '{}': data_offsets must be [begin, end] with begin <= end",
              path, name);
  Entry entry{name, Shape(std::move(dims)), (*offsets)[0].get<uint64_t>(),
              (*offsets)[1].get<uint64_t>(), std::string(known->name)};
  check_input(entry.end - entry.begin == numel * value_bytes,
              "{}: tensor '{}': shape {} needs {} bytes, data_offsets [{}, {}] hold {}", path, name,
              entry.shape, numel * value_bytes, entry.begin, entry.end, entry.end - entry.begin);
  return entry;
}

// The tensors' data must exactly tile [0, data_bytes): no gap, no overlap, nothing after.
void check_layout(const std::string& path, std::vector<Entry>& entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t needed = 0;
  for (const Entry& e : entries) needed = std::max(needed, e.end);
  check_input(needed <= data_bytes, "{}: truncated: header says {} bytes of data, file has {}",
              path, needed, data_bytes);
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    check_input(e.begin >= expected,
                "{}: tensor '{}': data_offsets [{}, {}] overlap the previous tensor (ends at {})",
                path, e.name, e.begin, e.end, expected);
    check_input(e.begin == expected,
                "{}: tensor '{}': gap in data: starts at byte {}, previous tensor ends at {}", path,
                e.name, e.begin, expected);
    expected = e.end;
  }
  check_input(expected == data_bytes, "{}: {} bytes after the last tensor's data", path,
              data_bytes - expected);
}

}  // namespace

struct SafetensorsWriter::Impl {
  Impl(std::string path, std::vector<TensorInfo> tensors)
      : layout(std::move(tensors)), file(std::move(path)) {}
  std::vector<TensorInfo> layout;
  size_t next = 0;
  AtomicFile file;
};

SafetensorsWriter::SafetensorsWriter(std::string path, std::vector<TensorInfo> layout,
                                     const std::map<std::string, std::string>& metadata) {
  check_names(path, layout);
  const std::string header = make_header(layout, metadata);
  impl_ = std::make_unique<Impl>(std::move(path), std::move(layout));
  const uint64_t header_bytes = header.size();
  impl_->file.write(std::as_bytes(std::span<const uint64_t>(&header_bytes, 1)));
  impl_->file.write(header);
}

SafetensorsWriter::~SafetensorsWriter() = default;

const TensorInfo& SafetensorsWriter::next() const {
  check(impl_->next < impl_->layout.size(), "{}: every tensor is already written",
        impl_->file.path());
  return impl_->layout[impl_->next];
}

void SafetensorsWriter::write(std::span<const float> values) {
  check_size(impl_->file.path(), next(), values.size());
  impl_->file.write(std::as_bytes(values));
  ++impl_->next;
}

FileDigest SafetensorsWriter::commit() {
  check(impl_->next == impl_->layout.size(), "{}: {} of {} tensors written", impl_->file.path(),
        impl_->next, impl_->layout.size());
  impl_->file.commit();
  return impl_->file.digest();
}

std::vector<TensorView> views_of(const std::vector<NamedTensor>& tensors) {
  std::vector<TensorView> views;
  views.reserve(tensors.size());
  for (const NamedTensor& t : tensors) views.push_back({t.name, t.shape, t.values});
  return views;
}

FileDigest write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  std::vector<TensorInfo> layout;
  for (const TensorView& t : tensors) {
    check_size(path, {t.name, t.shape}, t.values.size());
    layout.push_back({t.name, t.shape});
  }
  SafetensorsWriter writer(path, std::move(layout), metadata);
  for (const TensorView& t : tensors) writer.write(t.values);
  return writer.commit();
}

FileDigest write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  return write_safetensors(path, views_of(tensors), metadata);
}

namespace {

// An opened file and its parsed JSON header.
struct Header {
  explicit Header(const std::string& path);

  RegularFile in;
  uint64_t file_bytes = 0;
  uint64_t data_start = 0;  // where the tensors' data begins
  json fields;
};

Header::Header(const std::string& path) : in(path, "not a regular file"), file_bytes(in.size()) {
  check_input(file_bytes >= 8,
              "{}: truncated: file has {} bytes, a safetensors file starts with an 8-byte length",
              path, file_bytes);
  uint64_t header_bytes = 0;
  read_at(in, 0, &header_bytes, 8);
  check_input(header_bytes <= kMaxHeaderBytes,
              "{}: not a safetensors file: its first 8 bytes, the header's length, read {}, over "
              "the limit of {}",
              path, header_bytes, kMaxHeaderBytes);
  check_input(header_bytes <= file_bytes - 8,
              "{}: truncated: header says {} bytes of header, file has {} after the length", path,
              header_bytes, file_bytes - 8);
  std::string header_text(header_bytes, '\0');
  read_at(in, 8, header_text.data(), header_bytes);

  try {
    fields = json::parse(header_text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: header is not valid JSON: {}", path, e.what()));
  }
  check_input(fields.is_object(), "{}: header is not a JSON object", path);
  data_start = 8 + header_bytes;
}

}  // namespace

std::optional<std::string> first_non_finite(const std::vector<TensorView>& tensors) {
  for (const TensorView& t : tensors) {
    if (!std::all_of(t.values.begin(), t.values.end(), [](float v) { return std::isfinite(v); })) {
      return t.name;
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  const Header header(path);
  const auto metadata = header.fields.find(kMetadataKey);
  if (metadata == header.fields.end()) return {};
  return parse_metadata(path, *metadata);
}

namespace {

// The header's metadata and its tensors' entries, checked and sorted by where their data lies.
struct Contents {
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;
};

Contents parse_contents(const std::string& path, const Header& header,
                        std::span<const Dtype> dtypes = kFloatOnly) {
  Contents contents;
  for (const auto& [key, value] : header.fields.items()) {
    if (key == kMetadataKey) {
      contents.metadata = parse_metadata(path, value);
    } else {
      contents.entries.push_back(parse_entry(path, key, value, dtypes));
    }
  }
  check_layout(path, contents.entries, header.file_bytes - header.data_start);
  return contents;
}

}  // namespace

std::vector<TensorInfo> read_safetensors_layout(const std::string& path) {
  std::vector<TensorInfo> layout;
  for (const Entry& e : parse_contents(path, Header(path)).entries) {
    layout.push_back({e.name, e.shape});
  }
  return layout;
}

std::map<std::string, std::string> read_safetensors_into(const std::string& path,
                                                         const TensorDestination& destination) {
  const Header header(path);
  auto [metadata, entries] = parse_contents(path, header);
  for (const Entry& e : entries) {
    const std::optional<std::span<float>> values = destination(e.name, e.shape);
    if (!values) continue;
    check_size(path, {e.name, e.shape}, values->size());
    read_at(header.in, header.data_start + e.begin, values->data(), e.end - e.begin);
    const auto bad =
        std::find_if(values->begin(), values->end(), [](float v) { return !std::isfinite(v); });
    check_input(bad == values->end(), "{}: tensor '{}' holds a non-finite value ({}) at index {}",
                path, e.name, bad == values->end() ? 0.0f : *bad, bad - values->begin());
  }
  return metadata;
}

std::vector<StoredTensor> read_stored_tensors(const std::string& path,
                                              const std::vector<std::string>& names) {
  const Header header(path);
  const std::vector<Entry> entries = parse_contents(path, header, kStoredDtypes).entries;
  std::vector<StoredTensor> tensors;
  for (const std::string& name : names) {
    const auto entry = std::find_if(entries.begin(), entries.end(),
                                    [&name](const Entry& e) { return e.name == name; });
    if (entry == entries.end()) {
      std::vector<std::string> held;
      for (const Entry& e : entries) held.push_back(e.name);
      std::sort(held.begin(), held.end());
      throw InputError(
          fmt::format("{}: no tensor '{}' (the file holds {})", path, name,
                      held.empty() ? "none" : fmt::format("{}", fmt::join(held, ", "))));
    }
    StoredTensor& tensor = tensors.emplace_back();
    tensor.name = name;
    tensor.dtype = entry->dtype;
    tensor.shape = entry->shape;
    tensor.bytes.resize(entry->end - entry->begin);
    read_at(header.in, header.data_start + entry->begin, tensor.bytes.data(), tensor.bytes.size());
  }
  return tensors;
}

SafetensorsFile read_safetensors(const std::string& path) {
  SafetensorsFile file;
  file.metadata = read_safetensors_into(
      path,
      [&file](const std::string& name, const Shape& shape) -> std::optional<std::span<float>> {
        NamedTensor& t = file.tensors.emplace_back();
        t.name = name;
        t.shape = shape;
        t.values.resize(static_cast<size_t>(shape.numel()));
        return std::span<float>(t.values);
      });
  return file;
}

}  // namespace mpipe::checkpoint
