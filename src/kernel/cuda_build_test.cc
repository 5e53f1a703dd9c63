// What CPU CI can check of the CUDA sources without a GPU: they compiled for sm_90a
// (the build did it when nvcc was found), every family's parameter space was
// instantiated, the register/spill report exists for each kernel, and the C ABI loads,
// enumerates its configs and refuses shapes a config cannot handle without launching.
#include <dlfcn.h>

#include <filesystem>
#include <regex>

#include "core/strings.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kernel {
namespace {

namespace fs = std::filesystem;

fs::path KernelBuildDir() { return testing::BinaryDir() / "kernels"; }

struct PtxasKernel {
  std::string name;
  int regs = -1;
  int spill_stores = -1;
};

std::vector<PtxasKernel> ParsePtxas(const std::string& text) {
  std::vector<PtxasKernel> out;
  static const std::regex kEntry(R"(Compiling entry function '([^']+)')");
  static const std::regex kSpill(R"((\d+) bytes spill stores)");
  static const std::regex kRegs(R"(Used (\d+) registers)");
  std::smatch m;
  for (const std::string& line : Split(text, '\n')) {
    if (std::regex_search(line, m, kEntry)) {
      out.push_back({m[1].str()});
    } else if (!out.empty() && std::regex_search(line, m, kSpill)) {
      out.back().spill_stores = std::stoi(m[1].str());
    } else if (!out.empty() && std::regex_search(line, m, kRegs)) {
      out.back().regs = std::stoi(m[1].str());
    }
  }
  return out;
}

class CudaBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(KernelBuildDir() / "libhone_kernels.so")) {
      GTEST_SKIP() << "nvcc was not found when the build was configured; CUDA sources not compiled";
    }
  }
};

TEST_F(CudaBuildTest, EveryFamilyInstantiatedWithResourceReports) {
  struct Expect {
    const char* file;
    const char* kernel;
    int count;
  };
  // 14 RMSNorm configs x 2 quant modes, 36 RoPE configs, 13 mma + 2 simt decode configs.
  for (const Expect& e : {Expect{"rmsnorm_fp8", "RmsnormFp8Kernel", 28}, Expect{"rope_kvcache", "RopeKvCacheKernel", 36},
                          Expect{"paged_decode", "PagedDecodeMmaKernel", 13},
                          Expect{"paged_decode", "PagedDecodeSimtKernel", 2}}) {
    ASSERT_OK_AND_ASSIGN(std::string text, sys::ReadFile(KernelBuildDir() / (std::string(e.file) + ".ptxas.txt")));
    int n = 0;
    for (const PtxasKernel& k : ParsePtxas(text)) {
      if (k.name.find(e.kernel) == std::string::npos) continue;
      ++n;
      EXPECT_GT(k.regs, 0) << k.name;
      EXPECT_GE(k.spill_stores, 0) << k.name;
      // RMSNorm keeps the whole row in registers between its phases; a spill would
      // silently turn that into local-memory traffic. Other families' spills are
      // recorded with each timing instead.
      if (std::string(e.kernel) == "RmsnormFp8Kernel") {
        EXPECT_EQ(k.spill_stores, 0) << k.name;
      }
    }
    EXPECT_EQ(n, e.count) << e.kernel;
  }
}

TEST_F(CudaBuildTest, CAbiEnumeratesConfigsAndRefusesBadShapesWithoutAGpu) {
  void* h = dlopen((KernelBuildDir() / "libhone_kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) GTEST_SKIP() << "cannot load the library here (no CUDA runtime?): " << dlerror();
  auto num = reinterpret_cast<int (*)(int)>(dlsym(h, "hone_kb_num_configs"));
  auto name = reinterpret_cast<const char* (*)(int, int)>(dlsym(h, "hone_kb_config_name"));
  auto rms = reinterpret_cast<int (*)(int, const void*, const void*, const void*, void*, void*, float*, int, int, int,
                                      float, void*)>(dlsym(h, "hone_kb_rmsnorm_fp8"));
  auto decode = reinterpret_cast<int (*)(int, int, const void*, const void*, const void*, const int32_t*,
                                         const int32_t*, void*, void*, int, int, int, int, int, int, float, void*)>(
      dlsym(h, "hone_kb_paged_decode"));
  ASSERT_TRUE(num && name && rms && decode);
  EXPECT_EQ(num(0), 14);
  EXPECT_EQ(num(1), 36);
  EXPECT_EQ(num(2), 15);
  EXPECT_EQ(num(7), 0);
  EXPECT_STREQ(name(0, 8), "threads=256,vpt=2");
  EXPECT_STREQ(name(2, 0), "variant=mma,warps=2,warp_tile=16,stages=2");
  EXPECT_EQ(name(2, 99), nullptr);
  // threads=256,vpt=2 covers 4096 exactly; 8192 needs more slots, 2048 leaves a round idle.
  EXPECT_EQ(rms(8, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 8192, 1e-6f, nullptr), -1);
  EXPECT_EQ(rms(8, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 2048, 1e-6f, nullptr), -1);
  EXPECT_EQ(rms(8, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 4100, 1e-6f, nullptr), -1);
  // 17 query heads per kv head exceed the 16 mma rows; page size must be a power of two.
  EXPECT_EQ(decode(0, 1, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 34, 2, 128, 16, 4, 1.f,
                   nullptr), -1);
  EXPECT_EQ(decode(0, 1, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 32, 8, 128, 12, 4, 1.f,
                   nullptr), -1);
  EXPECT_EQ(decode(0, 4, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 32, 8, 128, 16, 4, 1.f,
                   nullptr), -1) << "splits need a workspace";
  dlclose(h);
}

}  // namespace
}  // namespace hone::kernel
