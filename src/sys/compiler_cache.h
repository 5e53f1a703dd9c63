// ccache for a CMake build whose objects other builds of the same source reuse: the
// provisioned llama.cpp build (target/llamacpp.cc) and a source patch's rebuild in its
// worktree (patch/build.cc). With CCACHE_BASEDIR at the folder that holds the sources
// and the build, and the directory left out of the hash, the cache keys carry relative
// paths, so a patch's first rebuild finds every unchanged object of the provisioned one.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hone::sys {

struct CompilerCache {
  std::vector<std::string> cmake_args;     // the compiler launchers (none without ccache)
  std::map<std::string, std::string> env;  // CCACHE_BASEDIR, CCACHE_NOHASHDIR (inert without ccache)
};

// `base_dir`: the folder above the sources and the build (a placeholder such as
// "{slot}" is kept as given).
CompilerCache CMakeCompilerCache(const std::string& base_dir);

}  // namespace hone::sys
