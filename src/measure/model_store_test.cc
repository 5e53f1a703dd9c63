// ModelStore with a stand-in llama-quantize (copies the file): which file and which
// launch configuration a candidate gets.
#include "measure/model_store.h"

#include "model/gguf.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-models"));
    base_ = (dir_->path() / "m-f16.gguf").string();
    model::GgufWriter w;
    w.AddKv("general.architecture", model::GgufValue::Str("llama"));
    w.AddKv("general.file_type", model::GgufValue::U32(1));  // MOSTLY_F16
    ASSERT_OK(w.Write(base_));
    quantize_ = (dir_->path() / "fake-quantize").string();
    ASSERT_OK(sys::WriteFileAtomic(quantize_, "#!/bin/sh\necho \"$3\" >> \"$(dirname \"$0\")/calls\"\ncp \"$1\" \"$2\"\n"));
    ASSERT_EQ(chmod(quantize_.c_str(), 0755), 0);
  }
  ModelStore Store() { return ModelStore(base_, quantize_, (dir_->path() / "variants").string()); }

  std::unique_ptr<sys::TempDir> dir_;
  std::string base_, quantize_;
};

TEST_F(ModelStoreTest, ADraftWeightsKnobBecomesADraftModelFile) {
  ModelStore store = Store();
  ASSERT_OK_AND_ASSIGN(Config launch, store.LaunchConfig(Config{{"spec_draft_weights", "q4_0"}, {"parallel", "8"}}));
  EXPECT_FALSE(launch.Get("spec_draft_weights")) << "an artifact knob never reaches the command line";
  ASSERT_TRUE(launch.Get("spec_draft_model"));
  EXPECT_TRUE(sys::FileExists(*launch.Get("spec_draft_model")));
  EXPECT_NE(launch.Get("spec_draft_model")->find("m-f16-q4_0.gguf"), std::string::npos);
  EXPECT_EQ(launch.GetOr("spec_type", ""), "draft-simple");
  EXPECT_EQ(launch.GetOr("parallel", ""), "8");
  // A spec_type given by the config stays; the draft file is made once.
  ASSERT_OK_AND_ASSIGN(Config again, store.LaunchConfig(Config{{"spec_draft_weights", "q4_0"}, {"spec_type", "draft-eagle3"}}));
  EXPECT_EQ(again.GetOr("spec_type", ""), "draft-eagle3");
  EXPECT_EQ(*sys::ReadFile(dir_->path() / "calls"), "Q4_0\n");
  // The base type as a draft is the base file itself; the served model stays the base.
  ASSERT_OK_AND_ASSIGN(Config same, store.LaunchConfig(Config{{"spec_draft_weights", "f16"}}));
  EXPECT_EQ(*same.Get("spec_draft_model"), base_);
  ASSERT_OK_AND_ASSIGN(std::string served, store.Resolve(Config{{"spec_draft_weights", "q4_0"}}));
  EXPECT_EQ(served, base_);
  // Without the knob nothing changes.
  ASSERT_OK_AND_ASSIGN(Config plain, store.LaunchConfig(Config{{"threads", "2"}}));
  EXPECT_EQ(plain, (Config{{"threads", "2"}}));
}

TEST_F(ModelStoreTest, WeightsSelectAQuantizedVariantAndFailuresAreArtifactErrors) {
  ModelStore store = Store();
  ASSERT_OK_AND_ASSIGN(std::string q8, store.Resolve(Config{{"weights", "q8_0"}}));
  EXPECT_NE(q8.find("m-f16-q8_0.gguf"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(std::string same, store.Resolve(Config{{"weights", "f16"}}));
  EXPECT_EQ(same, base_);
  ModelStore no_quantize(base_, "", (dir_->path() / "v2").string());
  auto missing = no_quantize.LaunchConfig(Config{{"spec_draft_weights", "q4_0"}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("llama-quantize"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace hone::measure
