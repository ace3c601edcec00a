//===- Version.cpp - muir's version and commit ----------------------------===//
//
// The build generates muir/Version.h (the project's version) and
// muir/GitRevision.h (the commit, regenerated when HEAD moves). A compile
// outside CMake (bench/gpu/check.sh on the GPU machine) has neither and
// says so.
//
//===----------------------------------------------------------------------===//
#include "muir/Support/Version.h"

#if __has_include("muir/Version.h")
#include "muir/Version.h"
#else
#define MUIR_VERSION_STRING "muir (version unknown: built outside CMake)"
#endif
#if __has_include("muir/GitRevision.h")
#include "muir/GitRevision.h"
#else
#define MUIR_GIT_COMMIT "unknown"
#endif

const char *muirBuildVersion() {
  return MUIR_VERSION_STRING ", git " MUIR_GIT_COMMIT;
}
