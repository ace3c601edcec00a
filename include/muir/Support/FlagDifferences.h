//===- FlagDifferences.h - two records' compile flags compared -*- C++ -*-===//
//
// A saved state and a trace each record the compile flags that shape a
// step (flag name -> value). Comparing two such records names every flag
// whose value differs, "(none)" where one record lacks it; the callers
// word the sentence.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_FLAGDIFFERENCES_H
#define MUIR_SUPPORT_FLAGDIFFERENCES_H

#include <map>
#include <set>
#include <string>

namespace mlir::muir {

/// Calls `each(name, valueInA, valueInB)` for every flag, in name order,
/// whose values in `a` and `b` differ ("(none)" where absent).
template <typename Fn>
void forEachFlagDifference(const std::map<std::string, std::string> &a,
                           const std::map<std::string, std::string> &b,
                           Fn each) {
  std::set<std::string> names;
  for (const auto &kv : a)
    names.insert(kv.first);
  for (const auto &kv : b)
    names.insert(kv.first);
  for (const std::string &name : names) {
    auto x = a.find(name), y = b.find(name);
    std::string was = x == a.end() ? "(none)" : x->second;
    std::string is = y == b.end() ? "(none)" : y->second;
    if (was != is)
      each(name, was, is);
  }
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_FLAGDIFFERENCES_H
