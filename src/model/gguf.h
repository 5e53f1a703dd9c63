// GGUF (llama.cpp's model file format, version 2/3) reading and writing.
//
// ReadGguf parses the header, the key/value metadata and the tensor table (not the
// tensor data) and checks every length and offset against the file size, so a
// corrupt or truncated file is a kDataLoss error naming what is wrong, never a crash.
// GgufWriter streams tensor data from generator callbacks, so a model larger than
// memory can be written; it writes to a temp file and renames on success.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace hone::model {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// ggml tensor types hone writes or reasons about (subset of ggml_type).
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kBF16 = 30,
};
std::string GgmlTypeName(uint32_t type);
// Bytes for `n` elements of `type`; nullopt for types hone does not know.
std::optional<uint64_t> GgmlTypeBytes(uint32_t type, uint64_t n);

struct GgufValue {
  GgufType type = GgufType::kU32;
  uint64_t u = 0;      // unsigned ints and bool
  int64_t i = 0;       // signed ints
  double f = 0;        // floats
  std::string s;       // strings
  GgufType elem_type = GgufType::kU32;  // arrays
  std::vector<GgufValue> arr;

  static GgufValue U32(uint32_t v) { GgufValue x; x.type = GgufType::kU32; x.u = v; return x; }
  static GgufValue I32(int32_t v) { GgufValue x; x.type = GgufType::kI32; x.i = v; return x; }
  static GgufValue F32(float v) { GgufValue x; x.type = GgufType::kF32; x.f = v; return x; }
  static GgufValue Bool(bool v) { GgufValue x; x.type = GgufType::kBool; x.u = v; return x; }
  static GgufValue Str(std::string v) { GgufValue x; x.type = GgufType::kString; x.s = std::move(v); return x; }

  std::optional<int64_t> AsInt() const;
  std::optional<double> AsDouble() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (row) dimension
  uint32_t type = 0;
  uint64_t offset = 0;         // relative to the data section
  uint64_t bytes = 0;          // size of its data
  uint64_t elements() const;
};

struct GgufFile {
  uint32_t version = 3;
  uint32_t alignment = 32;
  std::vector<std::pair<std::string, GgufValue>> kv;
  std::vector<GgufTensorInfo> tensors;
  uint64_t data_offset = 0;  // absolute file offset of the data section
  uint64_t file_size = 0;

  const GgufValue* Find(const std::string& key) const;
  std::optional<int64_t> Int(const std::string& key) const;
  std::optional<std::string> Str(const std::string& key) const;
  uint64_t ParameterCount() const;
  uint64_t TensorBytes() const;
};

Result<GgufFile> ReadGguf(const std::string& path);

// A model's tokenizer vocabulary: the pieces of its normal tokens (control, byte and
// unused tokens left out when the file types them) and the tokenizer model
// (tokenizer.ggml.model: "llama" = SentencePiece, "gpt2" = byte-level BPE, ...).
struct GgufVocab {
  std::vector<std::string> pieces;
  std::string model;
};
Result<GgufVocab> ReadGgufVocab(const std::string& path);

class GgufWriter {
 public:
  // Receives tensor bytes in order; a generator calls it as often as it likes.
  using Sink = std::function<void(const void* data, size_t bytes)>;
  using Generator = std::function<void(const Sink&)>;

  void AddKv(std::string key, GgufValue value);
  // Declares a tensor; `generator` must produce exactly GgmlTypeBytes(type, elements).
  void AddTensor(std::string name, std::vector<uint64_t> dims, GgmlType type, Generator generator);
  Status Write(const std::string& path);

 private:
  struct Pending {
    GgufTensorInfo info;
    Generator generator;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Pending> tensors_;
};

// IEEE half conversion (round to nearest even).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

}  // namespace hone::model
