#include "testing/test_util.h"

#include <cstdlib>

namespace hone::testing {

std::filesystem::path SourceDir() {
  const char* d = std::getenv("HONE_DATA_DIR");
  return d ? d : HONE_SOURCE_DIR_FALLBACK;
}

std::filesystem::path BinaryDir() {
  const char* d = std::getenv("HONE_BINARY_DIR");
  return d ? d : HONE_BINARY_DIR_FALLBACK;
}

}  // namespace hone::testing
