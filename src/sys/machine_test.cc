#include "sys/machine.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::sys {
namespace {

// A sysfs tree of 4 logical CPUs on 2 cores (two hyperthreads each): llama.cpp's auto
// thread count, and so hone's `cores`, is 2.
TEST(MachineTest, PhysicalCoresAreTheDistinctThreadSiblingSets) {
  ASSERT_OK_AND_ASSIGN(auto dir, TempDir::Create("hone-sysfs"));
  auto write = [&](int cpu, const std::string& siblings) {
    std::filesystem::path topo = dir->path() / ("cpu" + std::to_string(cpu)) / "topology";
    std::filesystem::create_directories(topo);
    ASSERT_OK(WriteFileAtomic((topo / "thread_siblings").string(), siblings + "\n"));
  };
  EXPECT_EQ(CountPhysicalCores(dir->path().string()), 0);  // nothing to read: unknown
  write(0, "05");
  write(1, "0a");
  write(2, "05");
  write(3, "0a");
  EXPECT_EQ(CountPhysicalCores(dir->path().string()), 2);
  // The count stops at the first missing CPU, as llama.cpp's does.
  write(5, "20");
  EXPECT_EQ(CountPhysicalCores(dir->path().string()), 2);
  EXPECT_GE(DescribeMachine().physical_cores, 1);  // this host's /sys
}

}  // namespace
}  // namespace hone::sys
