#include "model/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace hone::model {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian

struct TypeTraits {
  uint32_t type;
  const char* name;
  uint64_t block;  // elements per block
  uint64_t bytes;  // bytes per block
};
constexpr TypeTraits kTypes[] = {
    {0, "F32", 1, 4},      {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},   {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},   {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},   {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {30, "BF16", 1, 2},
};

const TypeTraits* Traits(uint32_t type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

// Bounds-checked little-endian cursor over the mapped file.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  template <class T>
  T Read(const char* what) {
    T v{};
    if (!Need(sizeof(T), what)) return v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string ReadString(const char* what) {
    uint64_t len = Read<uint64_t>(what);
    if (failed()) return {};
    if (!Need(len, what)) return {};
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

 private:
  bool Need(uint64_t n, const char* what) {
    if (failed()) return false;
    if (n > size_ - pos_) {
      Fail(std::string("truncated while reading ") + what + " at offset " + std::to_string(pos_));
      return false;
    }
    return true;
  }
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string error_;
};

bool ReadValue(Cursor& c, GgufType type, GgufValue& out, int depth) {
  out.type = type;
  switch (type) {
    case GgufType::kU8: out.u = c.Read<uint8_t>("u8"); break;
    case GgufType::kI8: out.i = c.Read<int8_t>("i8"); break;
    case GgufType::kU16: out.u = c.Read<uint16_t>("u16"); break;
    case GgufType::kI16: out.i = c.Read<int16_t>("i16"); break;
    case GgufType::kU32: out.u = c.Read<uint32_t>("u32"); break;
    case GgufType::kI32: out.i = c.Read<int32_t>("i32"); break;
    case GgufType::kF32: out.f = c.Read<float>("f32"); break;
    case GgufType::kBool: out.u = c.Read<uint8_t>("bool") != 0; break;
    case GgufType::kString: out.s = c.ReadString("string"); break;
    case GgufType::kU64: out.u = c.Read<uint64_t>("u64"); break;
    case GgufType::kI64: out.i = c.Read<int64_t>("i64"); break;
    case GgufType::kF64: out.f = c.Read<double>("f64"); break;
    case GgufType::kArray: {
      if (depth > 2) {
        c.Fail("arrays nested too deeply");
        return false;
      }
      uint32_t et = c.Read<uint32_t>("array type");
      uint64_t n = c.Read<uint64_t>("array length");
      if (c.failed()) return false;
      if (et > 12) {
        c.Fail("bad array element type " + std::to_string(et));
        return false;
      }
      // Every element takes at least one byte, so more elements than bytes left is corrupt.
      if (n > c.remaining()) {
        c.Fail("implausible array length " + std::to_string(n));
        return false;
      }
      out.elem_type = static_cast<GgufType>(et);
      out.arr.resize(n);
      for (uint64_t k = 0; k < n; ++k) {
        if (!ReadValue(c, out.elem_type, out.arr[k], depth + 1)) return false;
      }
      break;
    }
    default:
      c.Fail("bad value type " + std::to_string(static_cast<uint32_t>(type)));
      return false;
  }
  return !c.failed();
}

void Put(std::string& buf, const void* p, size_t n) { buf.append(static_cast<const char*>(p), n); }
template <class T>
void PutT(std::string& buf, T v) {
  Put(buf, &v, sizeof v);
}
void PutString(std::string& buf, const std::string& s) {
  PutT<uint64_t>(buf, s.size());
  buf += s;
}

void WriteValue(std::string& buf, const GgufValue& v) {
  switch (v.type) {
    case GgufType::kU8: PutT<uint8_t>(buf, static_cast<uint8_t>(v.u)); break;
    case GgufType::kI8: PutT<int8_t>(buf, static_cast<int8_t>(v.i)); break;
    case GgufType::kU16: PutT<uint16_t>(buf, static_cast<uint16_t>(v.u)); break;
    case GgufType::kI16: PutT<int16_t>(buf, static_cast<int16_t>(v.i)); break;
    case GgufType::kU32: PutT<uint32_t>(buf, static_cast<uint32_t>(v.u)); break;
    case GgufType::kI32: PutT<int32_t>(buf, static_cast<int32_t>(v.i)); break;
    case GgufType::kF32: PutT<float>(buf, static_cast<float>(v.f)); break;
    case GgufType::kBool: PutT<uint8_t>(buf, v.u ? 1 : 0); break;
    case GgufType::kString: PutString(buf, v.s); break;
    case GgufType::kU64: PutT<uint64_t>(buf, v.u); break;
    case GgufType::kI64: PutT<int64_t>(buf, v.i); break;
    case GgufType::kF64: PutT<double>(buf, v.f); break;
    case GgufType::kArray:
      PutT<uint32_t>(buf, static_cast<uint32_t>(v.elem_type));
      PutT<uint64_t>(buf, v.arr.size());
      for (const auto& e : v.arr) WriteValue(buf, e);
      break;
  }
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string GgmlTypeName(uint32_t type) {
  const TypeTraits* t = Traits(type);
  return t ? t->name : "type" + std::to_string(type);
}

std::optional<uint64_t> GgmlTypeBytes(uint32_t type, uint64_t n) {
  const TypeTraits* t = Traits(type);
  if (!t || n % t->block != 0) return std::nullopt;
  return n / t->block * t->bytes;
}

std::optional<int64_t> GgufValue::AsInt() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64: case GgufType::kBool:
      return static_cast<int64_t>(u);
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      return i;
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufValue::AsDouble() const {
  if (type == GgufType::kF32 || type == GgufType::kF64) return f;
  if (auto v = AsInt()) return static_cast<double>(*v);
  return std::nullopt;
}

uint64_t GgufTensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  for (const auto& [k, v] : kv) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<int64_t> GgufFile::Int(const std::string& key) const {
  const GgufValue* v = Find(key);
  return v ? v->AsInt() : std::nullopt;
}

std::optional<std::string> GgufFile::Str(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v || v->type != GgufType::kString) return std::nullopt;
  return v->s;
}

uint64_t GgufFile::ParameterCount() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.elements();
  return n;
}

uint64_t GgufFile::TensorBytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.bytes;
  return n;
}

Result<GgufFile> ReadGguf(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Fail(Error{errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInternal,
                      "cannot open model " + path + ": " + strerror(errno), {{"path", path}}});
  }
  struct stat st;
  fstat(fd, &st);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  auto corrupt = [&](const std::string& why) {
    return Fail(Error{ErrorCode::kDataLoss, "corrupt GGUF file " + path + ": " + why, {{"path", path}}});
  };
  if (size < 24) {
    close(fd);
    return corrupt("file is only " + std::to_string(size) + " bytes");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return Internal("mmap " + path + ": " + strerror(errno));
  std::unique_ptr<void, std::function<void(void*)>> unmap(map, [size](void* p) { munmap(p, size); });

  Cursor c(static_cast<const uint8_t*>(map), size);
  GgufFile file;
  file.file_size = size;
  if (c.Read<uint32_t>("magic") != kMagic) return corrupt("bad magic (not a GGUF file)");
  file.version = c.Read<uint32_t>("version");
  if (file.version < 2 || file.version > 3) return corrupt("unsupported version " + std::to_string(file.version));
  uint64_t n_tensors = c.Read<uint64_t>("tensor count");
  uint64_t n_kv = c.Read<uint64_t>("metadata count");
  // Each entry needs well over 8 bytes, so counts beyond size/8 are impossible.
  if (n_tensors > size / 8 || n_kv > size / 8) return corrupt("implausible tensor/metadata counts");
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.ReadString("metadata key");
    uint32_t type = c.Read<uint32_t>("metadata type");
    if (c.failed()) return corrupt(c.error());
    if (type > 12) return corrupt("metadata '" + key + "' has bad type " + std::to_string(type));
    GgufValue v;
    if (!ReadValue(c, static_cast<GgufType>(type), v, 0)) return corrupt("metadata '" + key + "': " + c.error());
    file.kv.emplace_back(std::move(key), std::move(v));
  }
  if (auto a = file.Int("general.alignment")) {
    if (*a <= 0 || (*a & (*a - 1)) != 0) return corrupt("bad general.alignment " + std::to_string(*a));
    file.alignment = static_cast<uint32_t>(*a);
  }
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo info;
    info.name = c.ReadString("tensor name");
    uint32_t n_dims = c.Read<uint32_t>("tensor dims");
    if (c.failed()) return corrupt(c.error());
    if (n_dims == 0 || n_dims > 4) return corrupt("tensor '" + info.name + "' has " + std::to_string(n_dims) + " dims");
    for (uint32_t d = 0; d < n_dims; ++d) info.dims.push_back(c.Read<uint64_t>("tensor dim"));
    info.type = c.Read<uint32_t>("tensor type");
    info.offset = c.Read<uint64_t>("tensor offset");
    if (c.failed()) return corrupt(c.error());
    file.tensors.push_back(std::move(info));
  }
  file.data_offset = AlignUp(c.pos(), file.alignment);
  // Vocab-only files end right after the metadata, without padding to the alignment.
  if (file.tensors.empty()) return file;
  if (file.data_offset > size) return corrupt("data section starts past the end of the file");
  uint64_t data_size = size - file.data_offset;
  for (size_t t = 0; t < file.tensors.size(); ++t) {
    auto& info = file.tensors[t];
    auto bytes = GgmlTypeBytes(info.type, info.elements());
    if (!bytes) {
      // Unknown type: infer from the next tensor's offset (or the end of the file).
      uint64_t next = data_size;
      for (const auto& other : file.tensors) {
        if (other.offset > info.offset && other.offset < next) next = other.offset;
      }
      bytes = next >= info.offset ? next - info.offset : 0;
    }
    info.bytes = *bytes;
    if (info.offset > data_size || info.bytes > data_size - info.offset) {
      return corrupt("tensor '" + info.name + "' data lies past the end of the file (truncated?)");
    }
  }
  return file;
}

void GgufWriter::AddKv(std::string key, GgufValue value) { kv_.emplace_back(std::move(key), std::move(value)); }

void GgufWriter::AddTensor(std::string name, std::vector<uint64_t> dims, GgmlType type, Generator generator) {
  Pending p;
  p.info.name = std::move(name);
  p.info.dims = std::move(dims);
  p.info.type = static_cast<uint32_t>(type);
  p.info.bytes = GgmlTypeBytes(p.info.type, p.info.elements()).value_or(0);
  p.generator = std::move(generator);
  tensors_.push_back(std::move(p));
}

Status GgufWriter::Write(const std::string& path) {
  constexpr uint64_t kAlign = 32;
  std::string head;
  PutT<uint32_t>(head, kMagic);
  PutT<uint32_t>(head, 3);
  PutT<uint64_t>(head, tensors_.size());
  PutT<uint64_t>(head, kv_.size());
  for (const auto& [k, v] : kv_) {
    PutString(head, k);
    PutT<uint32_t>(head, static_cast<uint32_t>(v.type));
    WriteValue(head, v);
  }
  uint64_t offset = 0;
  for (auto& t : tensors_) {
    if (t.info.bytes == 0) return InvalidArgument("tensor '" + t.info.name + "' has an unsupported type or shape");
    t.info.offset = offset;
    PutString(head, t.info.name);
    PutT<uint32_t>(head, static_cast<uint32_t>(t.info.dims.size()));
    for (uint64_t d : t.info.dims) PutT<uint64_t>(head, d);
    PutT<uint32_t>(head, t.info.type);
    PutT<uint64_t>(head, t.info.offset);
    offset = AlignUp(offset + t.info.bytes, kAlign);
  }
  head.resize(AlignUp(head.size(), kAlign), '\0');

  std::string tmp = path + ".partial";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Fail(Error{ErrorCode::kInternal, "cannot write " + tmp + ": " + strerror(errno), {{"path", tmp}}});
  std::vector<char> iobuf(1 << 20);
  std::setvbuf(f, iobuf.data(), _IOFBF, iobuf.size());
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  std::string short_tensor;
  for (auto& t : tensors_) {
    if (!ok) break;
    uint64_t written = 0;
    t.generator([&](const void* data, size_t n) {
      if (ok && std::fwrite(data, 1, n, f) != n) ok = false;
      written += n;
    });
    if (written != t.info.bytes) {
      short_tensor = t.info.name;
      ok = false;
      break;
    }
    uint64_t pad = AlignUp(t.info.bytes, kAlign) - t.info.bytes;
    static const char zeros[kAlign] = {};
    if (pad && std::fwrite(zeros, 1, pad, f) != pad) ok = false;
  }
  ok = std::fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  std::fclose(f);
  if (!ok) {
    std::remove(tmp.c_str());
    if (!short_tensor.empty()) return Internal("generator for tensor '" + short_tensor + "' wrote the wrong size");
    return Fail(Error{ErrorCode::kResourceExhausted, "failed writing " + path + " (disk full?)", {{"path", path}}});
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Internal("cannot rename " + tmp + " to " + path + ": " + strerror(errno));
  }
  return Ok();
}

uint16_t FloatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      x = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

Result<GgufVocab> ReadGgufVocab(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(GgufFile f, ReadGguf(path));
  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::kArray) return NotFound("no tokenizer.ggml.tokens in " + path);
  const GgufValue* types = f.Find("tokenizer.ggml.token_type");
  GgufVocab v;
  v.model = f.Str("tokenizer.ggml.model").value_or("");
  for (size_t i = 0; i < tokens->arr.size(); ++i) {
    constexpr int64_t kNormal = 1;
    if (types && i < types->arr.size() && types->arr[i].AsInt().value_or(kNormal) != kNormal) continue;
    v.pieces.push_back(tokens->arr[i].s);
  }
  return v;
}

}  // namespace hone::model
