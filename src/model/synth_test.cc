#include "model/synth.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::model {
namespace {

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-synth");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    // A small stand-in for llama.cpp's vocab-only files: 300 tokens, some BYTE-typed.
    GgufWriter w;
    w.AddKv("general.architecture", GgufValue::Str("llama"));
    w.AddKv("tokenizer.ggml.model", GgufValue::Str("llama"));
    GgufValue tokens, types;
    tokens.type = types.type = GgufType::kArray;
    tokens.elem_type = GgufType::kString;
    types.elem_type = GgufType::kI32;
    for (int i = 0; i < 300; ++i) {
      tokens.arr.push_back(GgufValue::Str("tok" + std::to_string(i)));
      types.arr.push_back(GgufValue::I32(i >= 3 && i < 259 ? 6 : 1));
    }
    w.AddKv("tokenizer.ggml.tokens", tokens);
    w.AddKv("tokenizer.ggml.token_type", types);
    vocab_ = (dir_->path() / "vocab.gguf").string();
    ASSERT_OK(w.Write(vocab_));
  }

  ModelShape Tiny() {
    ModelShape s;
    s.name = "t";
    s.n_layer = 2;
    s.n_embd = 64;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 128;
    s.n_ctx = 256;
    return s;
  }

  std::unique_ptr<sys::TempDir> dir_;
  std::string vocab_;
};

TEST_F(SynthTest, WritesALlamaModelThatReadsBack) {
  SynthOptions o{.shape = Tiny(), .seed = 7, .vocab_path = vocab_, .out_path = (dir_->path() / "m.gguf").string()};
  ASSERT_OK_AND_ASSIGN(SynthResult r, SynthesizeModel(o));
  EXPECT_EQ(r.n_vocab, 300);
  ASSERT_OK_AND_ASSIGN(GgufFile f, ReadGguf(r.path));
  EXPECT_EQ(*f.Str("general.architecture"), "llama");
  EXPECT_EQ(*f.Int("llama.block_count"), 2);
  EXPECT_EQ(*f.Int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(*f.Int("llama.rope.dimension_count"), 16);
  EXPECT_TRUE(f.Str("tokenizer.chat_template"));
  EXPECT_EQ(f.ParameterCount(), r.parameters);
  EXPECT_EQ(f.tensors.size(), 3u + 9u * 2u);
  // Byte tokens were re-typed NORMAL.
  for (const auto& t : f.Find("tokenizer.ggml.token_type")->arr) EXPECT_EQ(*t.AsInt(), 1);
}

TEST_F(SynthTest, TheFileDoesNotDependOnTheThreadCountAndBf16IsBf16) {
  // Wide enough that tensors span several 2^20-value blocks (generated in parallel).
  ModelShape s = Tiny();
  s.n_embd = 1024;
  s.n_head = 8;
  s.n_head_kv = 2;
  s.n_ff = 2048;
  auto make = [&](int threads, GgmlType type, const std::string& name) {
    std::vector<double> seen;
    SynthOptions o{.shape = s, .seed = 3, .vocab_path = vocab_, .out_path = (dir_->path() / name).string(),
                   .type = type, .threads = threads, .progress = [&](double f) { seen.push_back(f); }};
    EXPECT_OK(SynthesizeModel(o));
    EXPECT_FALSE(seen.empty());
    if (!seen.empty()) {
      EXPECT_DOUBLE_EQ(seen.back(), 1.0);
    }
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    return *sys::Sha256File(o.out_path);
  };
  EXPECT_EQ(make(1, GgmlType::kF16, "t1.gguf"), make(3, GgmlType::kF16, "t3.gguf"));
  make(2, GgmlType::kBF16, "bf.gguf");
  ASSERT_OK_AND_ASSIGN(GgufFile f, ReadGguf((dir_->path() / "bf.gguf").string()));
  EXPECT_EQ(*f.Int("general.file_type"), 32);  // LLAMA_FTYPE_MOSTLY_BF16
  int bf16 = 0;
  for (const auto& t : f.tensors) bf16 += t.type == static_cast<uint32_t>(GgmlType::kBF16);
  EXPECT_EQ(bf16, 2 + 7 * 2) << "every matrix is BF16, the norms stay F32";
}

TEST_F(SynthTest, ByteLevelBpeFragmentsOfUtf8CharactersAreRenderedAsText) {
  // A GPT-2 style vocabulary: "\u00c3\u00a9" is the bytes C3 A9 (a whole "é"), "\u00c3"
  // alone is C3 (a fragment), "\u0120hi" is " hi".
  GgufWriter w;
  w.AddKv("general.architecture", GgufValue::Str("llama"));
  w.AddKv("tokenizer.ggml.model", GgufValue::Str("gpt2"));
  GgufValue tokens, types;
  tokens.type = types.type = GgufType::kArray;
  tokens.elem_type = GgufType::kString;
  types.elem_type = GgufType::kI32;
  for (const char* t : {"\u0120hi", "\u00c3\u00a9", "\u00c3", "<|end|>", "ab"}) {
    tokens.arr.push_back(GgufValue::Str(t));
    types.arr.push_back(GgufValue::I32(std::string(t) == "<|end|>" ? 3 : 1));
  }
  w.AddKv("tokenizer.ggml.tokens", tokens);
  w.AddKv("tokenizer.ggml.token_type", types);
  std::string vocab = (dir_->path() / "bpe.gguf").string();
  ASSERT_OK(w.Write(vocab));
  SynthOptions o{.shape = Tiny(), .seed = 1, .vocab_path = vocab, .out_path = (dir_->path() / "bpe-m.gguf").string()};
  ASSERT_OK(SynthesizeModel(o));
  ASSERT_OK_AND_ASSIGN(GgufFile f, ReadGguf(o.out_path));
  std::vector<int64_t> got;
  for (const auto& t : f.Find("tokenizer.ggml.token_type")->arr) got.push_back(*t.AsInt());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 1, 4, 3, 1})) << "only the fragment becomes USER_DEFINED (4)";
}

TEST_F(SynthTest, DeterministicForASeed) {
  auto make = [&](uint64_t seed, const std::string& name) {
    SynthOptions o{.shape = Tiny(), .seed = seed, .vocab_path = vocab_, .out_path = (dir_->path() / name).string()};
    EXPECT_OK(SynthesizeModel(o));
    return *sys::Sha256File(o.out_path);
  };
  EXPECT_EQ(make(1, "a.gguf"), make(1, "b.gguf"));
  EXPECT_NE(make(1, "a.gguf"), make(2, "c.gguf"));
}

TEST_F(SynthTest, BadShapesNameTheRule) {
  ModelShape s = Tiny();
  s.n_head = 3;
  auto r = SynthesizeModel({.shape = s, .vocab_path = vocab_, .out_path = (dir_->path() / "x.gguf").string()});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "hidden (64) must be a multiple of heads (3)");
  s = Tiny();
  s.n_head_kv = 3;
  EXPECT_EQ(s.Validate().error().message, "heads (4) must be a multiple of kv_heads (3)");
}

TEST_F(SynthTest, MissingVocabIsNamed) {
  auto r = SynthesizeModel({.shape = Tiny(), .vocab_path = "/no/vocab.gguf", .out_path = (dir_->path() / "x.gguf").string()});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "vocab file not found: /no/vocab.gguf");
}

TEST_F(SynthTest, PresetsAndShapeFiles) {
  std::string presets = (testing::SourceDir() / "data/synth_presets.yaml").string();
  ASSERT_OK_AND_ASSIGN(ModelShape small, LoadShapePreset("small", presets));
  EXPECT_EQ(small.n_layer, 8);
  EXPECT_EQ(small.ParameterCount(32000), 155'730'944u);  // the reference probe's 155.7M
  auto unknown = LoadShapePreset("huge", presets);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown model preset 'huge' (known: tiny, small"), std::string::npos);

  std::string hf = (dir_->path() / "config.json").string();
  ASSERT_OK(sys::WriteFileAtomic(hf, R"({"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
    "num_key_value_heads": 2, "intermediate_size": 512, "max_position_embeddings": 1024})"));
  ASSERT_OK_AND_ASSIGN(ModelShape s, LoadShapeFile(hf));
  EXPECT_EQ(s.n_head_kv, 2);
  EXPECT_EQ(s.n_ctx, 1024);

  ASSERT_OK(sys::WriteFileAtomic(hf, R"({"num_hidden_layers": 4, "hidden_size": 250, "num_attention_heads": 5,
    "intermediate_size": 512})"));
  auto bad = LoadShapeFile(hf);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("config.json:1:1: "), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("multiples of 32"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace hone::model
