/*===- muir-rt/EntryTable.h - a runtime's step entries, one table -*- C -*-===*
 *
 * The CPU and the CUDA runtime each fill one muirrt_entry_table: a slot per
 * entry of muir-rt/Entries.def, typed by the entry's C declaration (so a
 * runtime whose function does not match its declaration does not compile),
 * NULL where the target has no such entry. It is the runtimes' one table of
 * entry points, as a HAL's vtable: the runner gives a step's JIT the
 * symbols of its target's table (no list of names to keep), and a CUDA
 * runtime loaded at run time shows through its table which Entries.def it
 * was built from (`signature`, compared with the runner's own
 * muirrt_entry_signature; muirrt_entry_signature_mismatch names the first
 * entry that differs).
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_ENTRYTABLE_H
#define MUIR_RT_ENTRYTABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct muirrt_entry_table {
  /* "cpu" or "cuda". */
  const char *target;
  /* The entries' symbol prefix: "muirrt_" or "muirrt_cuda_". */
  const char *prefix;
  /* The muirrt_entry_signature the runtime was built with. */
  const char *signature;
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS) RET(*NAME) PARAMS;
#include "muir-rt/Entries.def"
} muirrt_entry_table;

/* Entries.def's declarations as text, a line per entry ("NAME TARGETS RET
 * (PARAMS)"): equal texts, equal tables. */
static const char muirrt_entry_signature[] =
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS)                              \
  #NAME " " #TARGETS " " #RET " " #PARAMS "\n"
#include "muir-rt/Entries.def"
    "";

/* The first line of muirrt_entry_signature that `other` lacks or has
 * otherwise, copied into `out` (at most `size` bytes, NUL-terminated);
 * returns 0 when `other` is muirrt_entry_signature. */
static inline int muirrt_entry_signature_mismatch(const char *other,
                                                  char *out, size_t size) {
  const char *mine = muirrt_entry_signature;
  if (!other)
    other = "";
  if (strcmp(mine, other) == 0)
    return 0;
  while (*mine) {
    const char *end = strchr(mine, '\n');
    size_t len = (size_t)(end - mine) + 1;
    if (strncmp(mine, other, len) != 0)
      break;
    mine += len;
    other += len;
  }
  const char *line = *mine ? mine : other; /* ours, or one it has more */
  size_t len = strcspn(line, "\n");
  if (size) {
    if (len >= size)
      len = size - 1;
    memcpy(out, line, len);
    out[len] = '\0';
  }
  return 1;
}

/* The CPU runtime's table (libMuirRuntime). */
const muirrt_entry_table *muirrt_cpu_entries(void);
/* The CUDA runtime's table (libmuir_rt_cuda.so). */
const muirrt_entry_table *muirrt_cuda_entries(void);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_ENTRYTABLE_H */
