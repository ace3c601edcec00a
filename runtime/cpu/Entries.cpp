//===- Entries.cpp - the CPU runtime's table of step entries --------------===//
//
// muirrt_cpu_entries (muir-rt/EntryTable.h): every Cpu and Both entry of
// muir-rt/Entries.def as its muirrt_<name>, the Cuda ones NULL.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/EntryTable.h"
#include "muir-rt/Runtime.h"

namespace {
#define MUIR_RT_SLOT_Cpu(NAME) &muirrt_##NAME
#define MUIR_RT_SLOT_Both(NAME) &muirrt_##NAME
#define MUIR_RT_SLOT_Cuda(NAME) nullptr
const muirrt_entry_table table = {
    "cpu", "muirrt_", muirrt_entry_signature,
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS) MUIR_RT_SLOT_##TARGETS(NAME),
#include "muir-rt/Entries.def"
};
} // namespace

extern "C" const muirrt_entry_table *muirrt_cpu_entries(void) {
  return &table;
}
