// The llama.cpp knob catalog against the provisioned llama-server: every flag is one
// the binary lists in --help, the binary's argument parser accepts every value the
// search may try (`llama-server FLAG VALUE --version`: the parser handles arguments in
// order and --version exits 0 after them, without loading a model), and every
// environment variable is one the binary or its OpenMP runtime reads.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"
#include "target/catalog.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

class LlamaCatalogHelpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    server_ = testing::Llama()->server;
    auto c = target::LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp",
                                    target::NumericVersion(testing::Llama()->version));
    ASSERT_OK(c);
    catalog_ = std::move(*c);
  }
  sys::CommandOutput Run(std::vector<std::string> args) {
    args.insert(args.begin(), server_);
    auto out = sys::RunCommand({.argv = args}, std::chrono::milliseconds(30000));
    EXPECT_OK(out);
    return out ? *out : sys::CommandOutput{};
  }
  std::string server_;
  target::KnobCatalog catalog_;
};

TEST_F(LlamaCatalogHelpTest, EveryFlagIsInTheBinarysHelp) {
  sys::CommandOutput help = Run({"--help"});
  ASSERT_TRUE(help.status.success()) << help.status.ToString();
  // Option names: the dash-words of each line's option column.
  std::set<std::string> options;
  std::regex word("(^|[ ,])(--?[a-zA-Z0-9][a-zA-Z0-9-]*)");
  for (const std::string& line : Split(help.output, '\n')) {
    if (!line.starts_with("-")) continue;
    // Short options are padded ("-t,    --threads"); the description starts after the
    // next wide gap, or on the following line when the option column is long.
    size_t gap = line.find("   ", 8);
    std::string column = line.substr(0, gap);
    for (auto it = std::sregex_iterator(column.begin(), column.end(), word); it != std::sregex_iterator(); ++it) {
      options.insert((*it)[2].str());
    }
  }
  ASSERT_GT(options.size(), 200u);
  int flags = 0;
  for (const target::Knob& k : catalog_.knobs()) {
    for (const std::string& f : {k.flag, k.negative_flag}) {
      if (f.empty()) continue;
      ++flags;
      EXPECT_TRUE(options.contains(f)) << f << " (knob " << k.name << ") is not in llama-server --help";
    }
  }
  EXPECT_GT(flags, 60);
}

TEST_F(LlamaCatalogHelpTest, TheParserAcceptsEveryValueTheSearchMayTry) {
  int checked = 0;
  for (const target::Knob& k : catalog_.knobs()) {
    if (k.flag.empty()) continue;
    std::vector<std::vector<std::string>> cases;
    if (k.type == target::KnobType::kBool) {
      cases.push_back({k.flag});
      if (!k.negative_flag.empty()) cases.push_back({k.negative_flag});
    } else {
      std::vector<std::string> values = k.search_values;
      if (k.type == target::KnobType::kEnum) values.insert(values.end(), k.choices.begin(), k.choices.end());
      if (!k.default_value.empty() && k.default_value != "source") values.push_back(k.default_value);
      if (values.empty() && k.min) values.push_back(std::to_string(static_cast<int64_t>(*k.min)));
      for (const std::string& v : values) cases.push_back({k.flag, v});
    }
    for (const auto& args : cases) {
      if (k.type != target::KnobType::kBool && args.size() == 2 && args[1] == "auto" &&
          k.type == target::KnobType::kInt) {
        continue;  // "auto" means "leave the flag out" for numeric knobs
      }
      std::vector<std::string> argv = args;
      argv.push_back("--version");
      sys::CommandOutput out = Run(argv);
      EXPECT_TRUE(out.status.success()) << Join(args, " ") << " (knob " << k.name << "): " << out.status.ToString()
                                        << "\n" << LastLines(out.output, 4);
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
  // The check has teeth: a bad value and an unknown flag are refused.
  EXPECT_FALSE(Run({"--cache-type-k", "q9_9", "--version"}).status.success());
  EXPECT_FALSE(Run({"--no-such-flag", "--version"}).status.success());
}

TEST_F(LlamaCatalogHelpTest, EveryEnvironmentVariableIsReadByTheBinaryOrItsOpenMp) {
  auto binary = sys::ReadFile(server_);
  ASSERT_OK(binary);
  bool gomp = binary->find("libgomp.so") != std::string::npos;
  bool cuda = binary->find("ggml_cuda") != std::string::npos;
  int checked = 0;
  for (const target::Knob& k : catalog_.knobs()) {
    if (k.env.empty()) continue;
    if (k.env.starts_with("OMP_") || k.env.starts_with("GOMP_")) {
      EXPECT_TRUE(gomp) << k.env << ": the binary does not use libgomp";
    } else if (k.env.starts_with("GGML_CUDA_") && !cuda) {
      EXPECT_EQ(k.applies_to, "gpu") << k.env;  // read by the CUDA backend only
      continue;
    } else {
      EXPECT_NE(binary->find(k.env), std::string::npos) << k.env << " (knob " << k.name << ") is not read by "
                                                        << server_;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace hone::search
