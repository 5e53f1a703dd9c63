#include "search/catalog_proposer.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace hone::search {
namespace {

target::KnobCatalog Llama() {
  auto c = target::LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp", "0.4.0");
  EXPECT_TRUE(c);
  return *c;
}

TEST(CatalogProposerTest, ProposesValidSingleKnobChangesInPriorityOrder) {
  auto cat = Llama();
  CatalogProposer p(cat, {});
  ProposalContext ctx;
  ctx.cpus = 2;
  ctx.concurrency = 4;
  auto first = p.Next(ctx);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->delta.size(), 1u);
  EXPECT_TRUE(first->idea.starts_with("cache_type_k=") || first->idea.starts_with("cache_type_v=") ||
              first->idea.starts_with("weights=") || first->idea.starts_with("repack="))
      << first->idea;  // precision comes first
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto c = p.Next(ctx);
    if (!c) break;
    EXPECT_TRUE(seen.insert(c->idea).second) << "proposed twice: " << c->idea;
    EXPECT_OK(cat.Validate(ctx.best.Merged(c->delta)));
    EXPECT_EQ(cat.Find(c->delta.values().begin()->first)->applies_to == "gpu", false);
  }
  EXPECT_GT(seen.size(), 20u);
}

// Thread counts stay within the CPUs the session may use (oversubscribing a CPU
// backend's spinning workers costs 15-30%) and include the physical cores.
TEST(CatalogProposerTest, ThreadValuesNeverOversubscribe) {
  auto cat = Llama();
  ProposalContext ctx;
  ctx.cpus = 8;
  ctx.cores = 6;  // a hybrid CPU: 6 performance cores among 8 CPUs
  EXPECT_EQ(CatalogProposer::ValuesFor(*cat.Find("threads"), ctx), (std::vector<std::string>{"1", "4", "6", "8"}));
  ctx.cpus = 2;
  ctx.cores = 0;  // unknown
  EXPECT_EQ(CatalogProposer::ValuesFor(*cat.Find("threads_batch"), ctx), (std::vector<std::string>{"1", "2"}));
}

TEST(CatalogProposerTest, RespectsRestrictionsFailuresAndState) {
  auto cat = Llama();
  CatalogProposer p(cat, {.only = {"threads", "ubatch_size"}});
  ProposalContext ctx;
  ctx.cpus = 2;
  auto c = p.Next(ctx);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->idea.starts_with("threads=") || c->idea.starts_with("ubatch_size=")) << c->idea;
  p.Observe({*c, ctx.best.Merged(c->delta), Verdict::kLaunchFailed, 0, "bad_flag"});
  CatalogProposer restored(cat, {.only = {"threads", "ubatch_size"}});
  ASSERT_OK(restored.Load(p.Save()));
  for (int i = 0; i < 50; ++i) {
    auto n = restored.Next(ctx);
    if (!n) break;
    EXPECT_NE(n->idea, c->idea);
  }
  EXPECT_NE(p.Describe().find("LAUNCH_FAILED"), std::string::npos);
}

}  // namespace
}  // namespace hone::search
