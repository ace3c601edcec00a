/*===- muir-rt/TensorFiles.h - a context's tensors in files ----*- C -*-===*
 *
 * Loading and dumping the tensors of a runtime context (muir-rt/Runtime.h)
 * as .npy files: whole directories, a rank's part of a file, the checks
 * before a dump, single files. What a tool that owns a step's tensors
 * needs (muir-run, the GPU machine's step runner), in a library of its own,
 * MuirTensorFiles (runtime/cpu/TensorFiles.cpp and Npy.cpp), which the step
 * library does not link.
 *
 * Functions that can fail return 0 on success and non-zero on failure; the
 * message is then available from muirrt_last_error().
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_TENSORFILES_H
#define MUIR_RT_TENSORFILES_H

#include "muir-rt/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For every registered tensor, reads DIR/<name>.npy if it exists (a name
 * with '/' maps to subfolders) and marks the tensor loaded. Fails, naming
 * the file, on an unreadable file, a malformed header, a dtype other than
 * the tensor's (little-endian float32 '<f4' or float64 '<f8'), Fortran
 * order, or a shape that differs from the registered one. A missing DIR
 * is an error. *loaded receives the count. */
int muirrt_load_dir(MuirRtContext *ctx, const char *dir, int32_t *loaded);

/* muirrt_load_dir for tensors that are a rank's part of a whole tensor of
 * the same name (muirrt_init_part_from_seed's parts): for every tensor i
 * with global_shapes[i] (null: the tensor is whole), reads only its part,
 * at offsets[i], of DIR/<name>.npy, whose shape must be the global one: a
 * rank reads its rows, never the whole file. Its checks, messages and
 * *loaded are muirrt_load_dir's. */
int muirrt_load_dir_parts(MuirRtContext *ctx, const char *dir,
                          const int64_t *const *global_shapes,
                          const int64_t *const *offsets, int32_t *loaded);

/* Streamed writing: DIR/<name>.npy made for a whole tensor of `shape`
 * (float32 or float64 by `dtype`) with its data zero (the folders in the
 * name made too; the file must not exist), then each rank writes its part
 * of it: tensor `index` of ctx, at `offset` of the whole tensor of
 * `global_shape`, its rows only (the file's header must be that shape's).
 * 0 on success; otherwise the file is named in muirrt_last_error. */
int muirrt_npy_create(const char *dir, const char *name, int32_t dtype,
                      int32_t rank, const int64_t *shape);
int muirrt_npy_write_part(const MuirRtContext *ctx, int32_t index,
                          const char *dir, const int64_t *global_shape,
                          const int64_t *offset);

/* Checks that DIR exists or can be created and that a file can be written
 * in it, leaving nothing behind; call before running so that an unwritable
 * directory fails before any work. */
int muirrt_check_dump_dir(const char *dir);

/* Whether muirrt_dump_dir could write tensors named `names` to DIR,
 * changing nothing: DIR is a writable directory, or absent with a writable
 * directory above it; no folder on the way to a file (tensor names with
 * '/') is a symbolic link or a file; every DIR/<name>.npy is absent or a
 * regular file. Call before running, so that a dump that would fail costs
 * nothing. */
int muirrt_check_dump(const char *dir, const char *const *names,
                      int32_t count);

/* Writes every tensor to DIR/<name>.npy (creating DIR and subfolders),
 * all or nothing: every target is checked first (as muirrt_check_dump;
 * symbolic links inside DIR are never followed); the new dump is built in
 * a staging directory beside DIR (muirrt_stage_dir), with DIR's other
 * files carried over as hard links, which then takes DIR's place in one
 * rename (muirrt_stage_commit). DIR is at every moment the old dump whole
 * or the new one whole, also when a signal stops the process; on a failure
 * the staging directory and the folders this call created are removed. */
int muirrt_dump_dir(const MuirRtContext *ctx, const char *dir);

/* Writes every tensor to DIR/<name>.npy in DIR, an existing directory that
 * holds none of them (a staging directory); subfolders are created. */
int muirrt_write_dir(const MuirRtContext *ctx, const char *dir);

/* Single-file helpers (also used by the tests). npy_read allocates *data
 * with malloc (caller frees) and reports rank and shape (up to 8 dims). */
int muirrt_npy_read(const char *path, float **data, int32_t *rank,
                    int64_t shape[8]);
int muirrt_npy_write_atomic(const char *path, const float *data, int32_t rank,
                            const int64_t *shape);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_TENSORFILES_H */
