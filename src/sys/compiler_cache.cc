#include "sys/compiler_cache.h"

#include "sys/process.h"

namespace hone::sys {

CompilerCache CMakeCompilerCache(const std::string& base_dir) {
  CompilerCache c;
  if (!FindOnPath("ccache").empty()) {
    c.cmake_args = {"-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"};
  }
  c.env = {{"CCACHE_BASEDIR", base_dir}, {"CCACHE_NOHASHDIR", "1"}};
  return c;
}

}  // namespace hone::sys
