#include "kernel/task_spec.h"

#include "testing/test_util.h"

namespace hone::kernel {
namespace {

using ::testing::HasSubstr;

OpCatalog Catalog() {
  auto cat = OpCatalog::Load((testing::SourceDir() / "data/kernel/ops.yaml").string());
  EXPECT_TRUE(cat) << cat.error().ToString();
  return *cat;
}

const char* kGood = R"(
task_id: rms.test
op: rmsnorm_fp8_quant
baseline: {impl: [torch_compile, torch_eager]}
reference: torch_fp64
tolerances:
  bf16: {atol: 0.02, rtol: 0.02}
  fp8_e4m3: {min_snr_db: 25}
timing: {runs: 3}
cases:
  - {id: a, weight: 2, dims: {tokens: 64, hidden: 4096}, params: {quant: per_token, eps: 1.0e-6}}
  - {id: b, weight: 1, dims: {tokens: 8, hidden: 4096}, params: {quant: static}}
held_out_cases:
  - {id: c, dims: {tokens: 1024, hidden: 4096}, params: {quant: static}}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

Error ParseError(const std::string& text) {
  auto r = ParseTaskSpec(text, "t.yaml", Catalog());
  EXPECT_FALSE(r) << "expected an error";
  return r ? Error{} : r.error();
}

TEST(TaskSpecTest, ShippedSpecsValidate) {
  OpCatalog cat = Catalog();
  for (const char* name : {"rmsnorm_fp8_quant", "rope_kvcache", "paged_decode_attention"}) {
    ASSERT_OK_AND_ASSIGN(KernelTaskSpec t,
                         LoadTaskSpec((testing::SourceDir() / "data/kernel" / (std::string(name) + ".yaml")).string(), cat));
    EXPECT_EQ(t.op, name);
    EXPECT_GE(t.cases.size(), 5u);
    EXPECT_GE(t.held_out_cases.size(), 1u);
    EXPECT_GE(t.timing.runs, 3);
    EXPECT_EQ(t.sha256.size(), 64u);
  }
}

TEST(TaskSpecTest, ParsesCasesDefaultsAndHash) {
  ASSERT_OK_AND_ASSIGN(KernelTaskSpec t, ParseTaskSpec(kGood, "t.yaml", Catalog()));
  EXPECT_EQ(t.task_id, "rms.test");
  ASSERT_EQ(t.cases.size(), 2u);
  EXPECT_EQ(t.cases[0].dims.at("tokens"), 64);
  EXPECT_EQ(t.cases[0].params.at("quant"), "per_token");
  EXPECT_EQ(t.cases[0].params.at("eps"), "1.0e-6");
  EXPECT_DOUBLE_EQ(t.TotalWeight(), 3.0);
  ASSERT_EQ(t.held_out_cases.size(), 1u);
  EXPECT_TRUE(t.held_out_cases[0].held_out);
  EXPECT_EQ(t.timing.l2_state, "cold");
  EXPECT_DOUBLE_EQ(t.keep.min_improve, 0.02);
  EXPECT_EQ(*t.tolerances.at("fp8_e4m3").min_snr_db, 25.0);
  // The hash covers the bytes: any edit changes it (the spec is immutable once baselined).
  ASSERT_OK_AND_ASSIGN(KernelTaskSpec t2, ParseTaskSpec(Replace(kGood, "weight: 2", "weight: 3"), "t.yaml", Catalog()));
  EXPECT_NE(t.sha256, t2.sha256);
}

TEST(TaskSpecTest, RejectsNaiveBaseline) {
  Error e = ParseError(Replace(kGood, "[torch_compile, torch_eager]", "[my_naive_loop]"));
  EXPECT_THAT(e.message, HasSubstr("t.yaml:4:"));
  EXPECT_THAT(e.message, HasSubstr("'my_naive_loop' is not a production implementation"));
}

TEST(TaskSpecTest, RejectsUnknownOp) {
  EXPECT_THAT(ParseError(Replace(kGood, "op: rmsnorm_fp8_quant", "op: softmax")).message,
              HasSubstr("unknown op 'softmax'"));
}

TEST(TaskSpecTest, RejectsMissingAndUnknownDims) {
  EXPECT_THAT(ParseError(Replace(kGood, "dims: {tokens: 64, hidden: 4096}", "dims: {tokens: 64}")).message,
              HasSubstr("missing dim 'hidden'"));
  EXPECT_THAT(ParseError(Replace(kGood, "dims: {tokens: 64, hidden: 4096}", "dims: {tokens: 64, hidden: 4096, heads: 2}"))
                  .message,
              HasSubstr("has no dim 'heads'"));
  EXPECT_THAT(ParseError(Replace(kGood, "tokens: 64,", "tokens: 0,")).message, HasSubstr("cases[0].dims.tokens"));
}

TEST(TaskSpecTest, RejectsBadParams) {
  EXPECT_THAT(ParseError(Replace(kGood, "quant: per_token", "quant: per_channel")).message,
              HasSubstr("must be one of static, per_token"));
  EXPECT_THAT(ParseError(Replace(kGood, "eps: 1.0e-6", "eps: tiny")).message, HasSubstr("expected a number"));
  // quant keys the tuned table, so it is required.
  EXPECT_THAT(ParseError(Replace(kGood, "params: {quant: static}}\nheld", "params: {}}\nheld")).message,
              HasSubstr("missing param 'quant'"));
}

TEST(TaskSpecTest, RejectsDuplicateIdsZeroWeightAndTooFewRuns) {
  EXPECT_THAT(ParseError(Replace(kGood, "{id: b,", "{id: a,")).message, HasSubstr("duplicate case id 'a'"));
  EXPECT_THAT(ParseError(Replace(kGood, "weight: 1,", "weight: 0,")).message, HasSubstr("weight > 0"));
  EXPECT_THAT(ParseError(Replace(kGood, "timing: {runs: 3}", "timing: {runs: 2}")).message, HasSubstr("timing.runs"));
}

TEST(TaskSpecTest, RejectsUnknownFieldsAndEmptyTolerances) {
  EXPECT_THAT(ParseError(Replace(kGood, "reference: torch_fp64", "reference: torch_fp64\nspeed: fast")).message,
              HasSubstr("unknown field"));
  EXPECT_THAT(ParseError(Replace(kGood, "fp8_e4m3: {min_snr_db: 25}", "fp8_e4m3: {}")).message,
              HasSubstr("needs atol, rtol or min_snr_db"));
}

TEST(OpCatalogTest, RejectsKeyDimThatIsNotADim) {
  auto r = OpCatalog::Parse("production_baselines: [cublas]\nops:\n  x: {dims: [m], dtype: bf16, key_dims: [n]}\n",
                            "ops.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("'n' is not one of the op's dims"));
}

}  // namespace
}  // namespace hone::kernel
