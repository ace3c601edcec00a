/*===- FileKind.h - which files muir reads that it found by itself -------===*
 *
 * A file muir finds by itself (a state's tensors and manifest, a load
 * directory's .npy files, a cache entry) is read only when it is a regular
 * file: a FIFO would block the read forever, a device (/dev/zero) never
 * end. Both sides of the runtime boundary ask this one function: the
 * runtime's .npy reader (runtime/cpu/Npy.cpp) and the tools' openFoundFile
 * (include/muir/Support/Files.h).
 *
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_FILEKIND_H
#define MUIR_RT_FILEKIND_H

#include <sys/stat.h>

/* Why a file of mode `mode` (stat's st_mode) is not read as found data, or
 * null for a regular file. */
static inline const char *muirrt_not_regular(mode_t mode) {
  if (S_ISREG(mode))
    return 0;
  if (S_ISDIR(mode))
    return "it is a directory";
  if (S_ISFIFO(mode))
    return "it is a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "it is a device";
  if (S_ISSOCK(mode))
    return "it is a socket";
  return "it is not a regular file";
}

#endif /* MUIR_RT_FILEKIND_H */
