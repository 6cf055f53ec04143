// Tests for the safetensors writer and reader: layout, round trip, exact errors, atomic writes.
#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file made by hand: little-endian u64 length, `header` as given, then `data_bytes` zeros.
void write_raw(const std::string& path, const std::string& header, size_t data_bytes) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(data_bytes, '\0');
  write_bytes(path, bytes);
}

// The message of the InputError read_safetensors throws, or "" if it throws none.
std::string read_error(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> folder_listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Safetensors, RoundTripKeepsNamesShapesValuesAndMetadata) {
  testing::TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const std::vector<NamedTensor> tensors = {
      {"layers.1.weight", Shape{2, 3}, {1.5f, -2.f, 0.f, 3.25f, 1e-30f, -7.f}},
      {"layers.0.bias", Shape{3}, {0.1f, 0.2f, 0.3f}},
      {"scalar", Shape{}, {42.f}},
      {"empty", Shape{0, 4}, {}},
  };
  write_safetensors(path, tensors, {{"format", "pt"}, {"step", "7"}});

  const SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(file.tensors[i].name, tensors[i].name);
    EXPECT_EQ(file.tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(file.tensors[i].values, tensors[i].values);
  }
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"step", "7"}}));
}

TEST(SafetensorsWriter, TensorByTensorWritesTheSameBytesAsTheWholeList) {
  testing::TempDir dir;
  const std::vector<NamedTensor> tensors = {
      {"layers.0.weight", Shape{2, 2}, {1.f, 2.f, 3.f, 4.f}},
      {"layers.0.bias", Shape{2}, {0.5f, -0.5f}},
  };
  write_safetensors(dir.file("whole.safetensors"), tensors, {{"format", "pt"}});
  SafetensorsWriter writer(dir.file("streamed.safetensors"),
                           {{"layers.0.weight", Shape{2, 2}}, {"layers.0.bias", Shape{2}}},
                           {{"format", "pt"}});
  EXPECT_EQ(writer.next().name, "layers.0.weight");
  writer.write(tensors[0].values);
  EXPECT_EQ(writer.next().name, "layers.0.bias");
  writer.write(tensors[1].values);
  writer.commit();
  EXPECT_EQ(read_bytes(dir.file("streamed.safetensors")),
            read_bytes(dir.file("whole.safetensors")));
}

TEST(SafetensorsWriter, AWriterLeftBeforeEveryTensorLeavesNoFile) {
  testing::TempDir dir;
  const std::string path = dir.file("w.safetensors");
  {
    SafetensorsWriter writer(path, {{"a", Shape{2}}, {"b", Shape{1}}});
    writer.write(std::vector<float>{1.f, 2.f});
    try {
      writer.commit();
      FAIL() << "commit of a partial file";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), path + ": 1 of 2 tensors written");
    }
  }
  EXPECT_TRUE(folder_listing(dir.path()).empty());
}

TEST(SafetensorsWriter, RefusesATensorOfTheWrongSize) {
  testing::TempDir dir;
  const std::string path = dir.file("w.safetensors");
  SafetensorsWriter writer(path, {{"a", Shape{2, 3}}});
  try {
    writer.write(std::vector<float>{1.f});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": tensor 'a' has 1 values, shape [2, 3] needs 6");
  }
}

TEST(Safetensors, FileIsLengthPrefixThenSpacePaddedJsonThenLittleEndianData) {
  testing::TempDir dir;
  const std::string path = dir.file("one.safetensors");
  write_safetensors(path, {{"w", Shape{2}, {1.0f, -2.0f}}}, {{"format", "pt"}});

  const std::string bytes = read_bytes(path);
  const std::string json_text =
      R"({"__metadata__":{"format":"pt"},"w":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  const size_t header_bytes = (json_text.size() + 7) / 8 * 8;
  ASSERT_EQ(bytes.size(), 8 + header_bytes + 8);
  // u64 little-endian header length: low byte first, the rest zero.
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), header_bytes);
  EXPECT_EQ(bytes.substr(1, 7), std::string(7, '\0'));
  EXPECT_EQ(header_bytes % 8, 0u);
  EXPECT_EQ(bytes.substr(8, header_bytes),
            json_text + std::string(header_bytes - json_text.size(), ' '));
  // 1.0f = 0x3f800000 and -2.0f = 0xc0000000, least significant byte first.
  EXPECT_EQ(bytes.substr(8 + header_bytes), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
}

TEST(Safetensors, DataFollowsTheGivenOrderAndReadsBackInThatOrder) {
  testing::TempDir dir;
  const std::string path = dir.file("order.safetensors");
  write_safetensors(path, {{"b", Shape{1}, {2.f}}, {"a", Shape{2}, {1.f, 1.f}}});

  const std::string bytes = read_bytes(path);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, header_bytes));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({0, 4}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json({4, 12}));
  EXPECT_FALSE(header.contains("__metadata__"));

  const SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].name, "b");
  EXPECT_EQ(file.tensors[1].name, "a");
}

TEST(Safetensors, OverwritingReplacesTheWholeFile) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path,
                    std::vector<NamedTensor>{{"big", Shape{100}, std::vector<float>(100, 1.f)}});
  write_safetensors(path, {{"small", Shape{1}, {3.f}}});
  const SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].name, "small");
  EXPECT_EQ(folder_listing(dir.path()), std::vector<std::string>{"x.safetensors"});
}

TEST(Safetensors, TruncatedDataNamesBothSizes) {
  testing::TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  write_safetensors(path,
                    std::vector<NamedTensor>{{"w", Shape{256}, std::vector<float>(256, 1.f)}});
  fs::resize_file(path, fs::file_size(path) - 512);
  EXPECT_EQ(read_error(path), path + ": truncated: header says 1024 bytes of data, file has 512");
}

TEST(Safetensors, NonFiniteValueIsRefusedNamingTheTensorAndIndex) {
  testing::TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const float inf = std::numeric_limits<float>::infinity();
  write_safetensors(path, std::vector<NamedTensor>{{"a", Shape{2}, {1.f, 2.f}},
                                                   {"b", Shape{3}, {0.f, 0.f, -inf}}});
  EXPECT_EQ(read_error(path), path + ": tensor 'b' holds a non-finite value (-inf) at index 2");
  write_safetensors(
      path, std::vector<NamedTensor>{{"a", Shape{1}, {std::numeric_limits<float>::quiet_NaN()}}});
  EXPECT_EQ(read_error(path), path + ": tensor 'a' holds a non-finite value (nan) at index 0");
}

TEST(Safetensors, FileShorterThanTheLengthPrefixIsTruncated) {
  testing::TempDir dir;
  const std::string path = dir.file("short.safetensors");
  write_bytes(path, "abc");
  EXPECT_EQ(
      read_error(path),
      path + ": truncated: file has 3 bytes, a safetensors file starts with an 8-byte length");
}

TEST(Safetensors, HeaderLongerThanTheFileIsTruncated) {
  testing::TempDir dir;
  const std::string path = dir.file("h.safetensors");
  write_raw(path, "{}", 0);
  fs::resize_file(path, 9);  // length says 2, one byte follows
  EXPECT_EQ(read_error(path),
            path + ": truncated: header says 2 bytes of header, file has 1 after the length");
}

TEST(Safetensors, ImplausibleHeaderLengthIsRejected) {
  testing::TempDir dir;
  const std::string path = dir.file("huge.safetensors");
  write_bytes(path, std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
  EXPECT_EQ(read_error(path), path +
                                  ": not a safetensors file: its first 8 bytes, the header's "
                                  "length, read 9223372036854775807, over the limit of 100000000");
}

TEST(Safetensors, HeaderThatIsNotJsonIsRejected) {
  testing::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_raw(path, "{\"w\": [", 0);
  EXPECT_TRUE(read_error(path).starts_with(path + ": header is not valid JSON: "));
  write_raw(path, "[1, 2]  ", 0);
  EXPECT_EQ(read_error(path), path + ": header is not a JSON object");
}

TEST(Safetensors, DtypeOtherThanF32IsRejected) {
  testing::TempDir dir;
  const std::string path = dir.file("f16.safetensors");
  write_raw(path, R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4);
  EXPECT_EQ(read_error(path), path + ": tensor 'w': dtype F16 is not supported (only F32)");
}

TEST(Safetensors, ShapeThatDisagreesWithTheByteCountIsRejected) {
  testing::TempDir dir;
  const std::string path = dir.file("shape.safetensors");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(read_error(path),
            path + ": tensor 'w': shape [3] needs 12 bytes, data_offsets [0, 8] hold 8");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[-3],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(read_error(path),
            path + ": tensor 'w': shape must be an array of non-negative integers");
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8);
  EXPECT_EQ(read_error(path),
            path + ": tensor 'w': data_offsets must be [begin, end] with begin <= end");
}

TEST(Safetensors, OverlapGapAndTrailingBytesAreRejected) {
  testing::TempDir dir;
  const std::string path = dir.file("layout.safetensors");
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            8);
  EXPECT_EQ(read_error(path),
            path + ": tensor 'b': data_offsets [4, 8] overlap the previous tensor (ends at 8)");
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
            12);
  EXPECT_EQ(read_error(path),
            path + ": tensor 'b': gap in data: starts at byte 8, previous tensor ends at 4");
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12);
  EXPECT_EQ(read_error(path), path + ": 8 bytes after the last tensor's data");
}

TEST(Safetensors, MetadataMustMapStringsToStrings) {
  testing::TempDir dir;
  const std::string path = dir.file("meta.safetensors");
  write_raw(path, R"({"__metadata__":{"step":7}})", 0);
  EXPECT_EQ(read_error(path), path + ": __metadata__.step: value must be a string");
}

TEST(Safetensors, MissingFileIsAnInputError) {
  testing::TempDir dir;
  const std::string path = dir.file("nope.safetensors");
  EXPECT_EQ(read_error(path), path + ": cannot open: No such file or directory");
}

TEST(Safetensors, FifoIsRefusedWithoutWaitingForAWriter) {
  // --init-weights, compare or generate given a FIFO: old code said "cannot read: Operation not
  // supported" (and a reader that opened it first would block until ctest's timeout).
  testing::TempDir dir;
  const std::string fifo = dir.file("w.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_error(fifo), fifo + ": not a regular file");
  EXPECT_EQ(testing::input_error_of([&] { read_safetensors_layout(fifo); }),
            fifo + ": not a regular file");
}

TEST(Safetensors, CharacterDeviceIsRefusedBeforeItIsRead) {
  EXPECT_EQ(read_error("/dev/zero"), "/dev/zero: not a regular file");
}

TEST(Safetensors, WriteIntoAMissingDirectoryThrowsAndCreatesNothing) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "no" / "such" / "x.safetensors").string();
  EXPECT_THROW(write_safetensors(path, {{"w", Shape{1}, {1.f}}}), Error);
  EXPECT_TRUE(folder_listing(dir.path()).empty());
}

TEST(Safetensors, FailedRenameLeavesNoTemporaryFile) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  fs::create_directory(path);  // rename(temp, path) fails: path is a directory
  EXPECT_THROW(write_safetensors(path, {{"w", Shape{1}, {1.f}}}), Error);
  EXPECT_EQ(folder_listing(dir.path()), std::vector<std::string>{"x.safetensors"});
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(Safetensors, InvalidTensorsAreRejectedBeforeTouchingTheFile) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {{"old", Shape{1}, {1.f}}});
  EXPECT_THROW(write_safetensors(path, {{"w", Shape{2}, {1.f}}}), Error);
  EXPECT_THROW(write_safetensors(path, {{"w", Shape{1}, {1.f}}, {"w", Shape{1}, {2.f}}}), Error);
  EXPECT_THROW(write_safetensors(path, {{"__metadata__", Shape{1}, {1.f}}}), Error);
  EXPECT_EQ(read_safetensors(path).tensors.at(0).name, "old");
  EXPECT_EQ(folder_listing(dir.path()), std::vector<std::string>{"x.safetensors"});
}

TEST(Safetensors, WriteReturnsTheSizeAndCrc32OfTheFile) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  const FileDigest digest = write_safetensors(path, {{"w", Shape{2}, {1.f, 2.f}}}, {{"step", "3"}});
  EXPECT_EQ(digest, digest_file(path));
  EXPECT_EQ(digest.size, fs::file_size(path));
}

TEST(Safetensors, MetadataCanBeReadWithoutTheTensors) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {{"w", Shape{2}, {1.f, 2.f}}}, {{"step", "3"}, {"stage", "1"}});
  fs::resize_file(path, fs::file_size(path) - 4);  // the data no longer fits; the header does
  EXPECT_EQ(read_safetensors_metadata(path),
            (std::map<std::string, std::string>{{"stage", "1"}, {"step", "3"}}));
  EXPECT_NE(read_error(path), "");
}

TEST(Safetensors, LayoutListsNamesAndShapesInDataOrderWithoutReadingValues) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  write_safetensors(path, {{"z", Shape{2, 1}, {1.f, nan}}, {"a", Shape{3}, {4.f, 5.f, 6.f}}});
  const std::vector<TensorInfo> layout = read_safetensors_layout(path);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].name, "z");  // first in the data, though the header sorts it last
  EXPECT_EQ(layout[0].shape, (Shape{2, 1}));
  EXPECT_EQ(layout[1].name, "a");
  EXPECT_EQ(layout[1].shape, (Shape{3}));
  EXPECT_NE(read_error(path), "");  // the NaN, which the layout does not read
}

TEST(Safetensors, LayoutChecksTheHeaderAsTheReaderDoes) {
  testing::TempDir dir;
  const std::string path = dir.file("f16.safetensors");
  write_raw(path, R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4);
  try {
    read_safetensors_layout(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": tensor 'w': dtype F16 is not supported (only F32)");
  }
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4);
  EXPECT_THROW(read_safetensors_layout(path), InputError);  // truncated
}

TEST(Safetensors, StoredTensorsAreReadAsStoredInTheOrderAsked) {
  testing::TempDir dir;
  const std::string path = dir.file("data.safetensors");
  // u8 [2, 2] = 1, 2, 255, 0 then i64 [2] = -1, 7 (little-endian).
  const std::string bytes = std::string("\x01\x02\xff\x00", 4) +
                            std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) +
                            std::string("\x07\x00\x00\x00\x00\x00\x00\x00", 8);
  write_raw(path,
            R"({"a":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]},)"
            R"("b":{"dtype":"I64","shape":[2],"data_offsets":[4,20]}})",
            0);
  std::ofstream(path, std::ios::binary | std::ios::app).write(bytes.data(), 20);
  const std::vector<StoredTensor> tensors = read_stored_tensors(path, {"b", "a"});
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "b");
  EXPECT_EQ(tensors[0].dtype, "I64");
  EXPECT_EQ(tensors[0].shape, (Shape{2}));
  int64_t second = 0;
  std::memcpy(&second, tensors[0].bytes.data() + 8, 8);
  EXPECT_EQ(second, 7);
  EXPECT_EQ(tensors[1].dtype, "U8");
  EXPECT_EQ(std::to_integer<int>(tensors[1].bytes[2]), 255);
  EXPECT_EQ(read_error(path), path + ": tensor 'a': dtype U8 is not supported (only F32)");
  try {
    read_stored_tensors(path, {"a", "c"});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": no tensor 'c' (the file holds a, b)");
  }
  write_raw(path, R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4);
  try {
    read_stored_tensors(path, {"w"});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": tensor 'w': dtype F16 is not supported (only F32, U8 or I64)");
  }
}

TEST(Safetensors, FirstNonFiniteNamesTheFirstTensorWithANanOrAnInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto first = [](const std::vector<NamedTensor>& tensors) {
    return first_non_finite(views_of(tensors));
  };
  EXPECT_EQ(first({{"a", Shape{2}, {1.f, -2.f}}}), std::nullopt);
  EXPECT_EQ(first({{"a", Shape{1}, {1.f}}, {"b", Shape{2}, {0.f, -inf}}, {"c", Shape{1}, {nan}}}),
            "b");
  EXPECT_EQ(first({{"a", Shape{1}, {1.f}}, {"c", Shape{1}, {nan}}}), "c");
  EXPECT_EQ(first({}), std::nullopt);
}

TEST(Safetensors, WritesViewsWithoutCopyingThemAndReadsBackTheSameValues) {
  testing::TempDir dir;
  const std::vector<float> weight = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  // Two views into one buffer, as a stage's parameters are views into its parameter buffer.
  const std::vector<TensorView> views = {{"w", Shape{2, 2}, std::span(weight).first(4)},
                                         {"b", Shape{2}, std::span(weight).subspan(4)}};
  write_safetensors(dir.file("views.safetensors"), views, {{"format", "pt"}});
  write_safetensors(dir.file("owned.safetensors"),
                    {{"w", Shape{2, 2}, {1.f, 2.f, 3.f, 4.f}}, {"b", Shape{2}, {5.f, 6.f}}},
                    {{"format", "pt"}});
  EXPECT_EQ(digest_file(dir.file("views.safetensors")), digest_file(dir.file("owned.safetensors")));
  EXPECT_THROW(write_safetensors(dir.file("bad.safetensors"),
                                 std::vector<TensorView>{{"w", Shape{3}, std::span(weight)}}),
               Error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.safetensors")));
}

}  // namespace
}  // namespace mpipe::checkpoint
