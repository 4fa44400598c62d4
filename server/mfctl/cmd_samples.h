/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to mfctl: `mfctl samples export|delete` (cmd_samples.c) and the NumPy .npy
 * writer it uses (cmd_samples_npy.c; format: docs/offload.md, "Sample export").
 */
#ifndef MFCTL_CMD_SAMPLES_H
#define MFCTL_CMD_SAMPLES_H

#include "mfctl.h"

#include <stdint.h>
#include <stdio.h>

#define MFCTL_SAMPLES_USAGE                                                                        \
    "usage: mfctl [global options] samples export --model M [--version V] [--since T]\n"           \
    "                 [--until T] [--kind hard|audit] [--min-teacher-confidence X]\n"              \
    "                 [--format npy|webdataset] OUTDIR\n"                                          \
    "       mfctl [global options] samples delete --device ID\n"                                   \
    "export pages through GET /v1/admin/samples (role data) and writes OUTDIR/samples.jsonl\n"     \
    "(one object per sample, field \"row\" indexes the arrays), inputs.npy (uint8 [N, L];\n"       \
    "[total] plus input_offsets.npy int64 [N+1] when input lengths differ), student.npy and\n"     \
    "teacher.npy (float32 [N, classes]; NaN rows for unlabelled samples). T is a Unix time\n"      \
    "in seconds (received_at in [since, until)); X in [0, 1] keeps only labelled samples\n"        \
    "the teacher was at least that sure of. Files appear complete or not at all.\n"                \
    "--format webdataset writes OUTDIR/samples.tar instead (POSIX ustar): per sample\n"            \
    "<id>.input.npy (uint8 [L]) and <id>.json (its samples.jsonl object).\n"                       \
    "delete removes a device's samples, batch ids and unshared input blobs (privacy).\n"

int mfctl__cmd_samples(struct mfctl *c, int argc, char **argv);

/* Every .npy header written here is this long (a multiple of 64, as the format asks), so it
 * can be reserved before the shape is known and rewritten in place at the end. */
#define MFCTL_NPY_HEADER_LEN 128

/*
 * Formats a .npy version 1.0 header for a C-order array of `descr` ("|u1", "<f4", "<i8")
 * with `ndim` (1 or 2) dimensions `shape` into `out`: magic, version, little-endian header
 * length, the dictionary NumPy writes, space padding and '\n', MFCTL_NPY_HEADER_LEN bytes.
 */
void mfctl__npy_header(char out[MFCTL_NPY_HEADER_LEN], const char *descr, int ndim,
                       const uint64_t *shape);

#define MFCTL_PATH_MAX 4096

/* Every output file is written as `path`.part and renamed into place when complete:
 * part_open creates it (NULL with a message), part_commit flushes, syncs, closes and renames
 * it (MF_E_IO), part_abort closes and removes it (safe on NULL). */
FILE *mfctl__part_open(struct mf_ctx *ctx, const char *path);
int mfctl__part_commit(FILE *f, struct mf_ctx *ctx, const char *path);
void mfctl__part_abort(FILE *f, const char *path);

/* A .npy file written as a stream: the header is reserved at open and filled at close. */
struct mfctl_npy {
    FILE *f;
    const char *descr;
    char path[MFCTL_PATH_MAX]; /* final name; the data goes to path + ".part" until close */
};

/* Creates `path`.part with a reserved header; MF_E_IO with a message. */
int mfctl__npy_open(struct mfctl_npy *n, struct mf_ctx *ctx, const char *path, const char *descr);
int mfctl__npy_write(struct mfctl_npy *n, struct mf_ctx *ctx, const void *p, size_t len);
/* Appends one float as IEEE-754 binary32, little-endian ("<f4"). */
int mfctl__npy_put_f32(struct mfctl_npy *n, struct mf_ctx *ctx, float v);
/* Appends one int64, little-endian ("<i8"). */
int mfctl__npy_put_i64(struct mfctl_npy *n, struct mf_ctx *ctx, int64_t v);
/* Writes the header for `shape`, syncs, closes and renames .part into place; MF_E_IO. */
int mfctl__npy_finish(struct mfctl_npy *n, struct mf_ctx *ctx, int ndim, const uint64_t *shape);
/* Closes and removes the .part file (after a failure); safe on a never-opened writer. */
void mfctl__npy_abort(struct mfctl_npy *n);

/*
 * A POSIX ustar archive written as a stream (cmd_samples_tar.c), the WebDataset export:
 * regular files only, names of at most 99 bytes, each member a 512-byte header then its
 * data padded to 512 bytes; two zero blocks end it.
 */
#define MFCTL_TAR_BLOCK 512

struct mfctl_tar {
    FILE *f;
    char path[MFCTL_PATH_MAX];
};

/* The ustar header of a regular file `name` (< 100 bytes) of `size` bytes, mode 0644,
 * modified at `mtime` (Unix seconds), owner 0:0, checksum filled in. */
void mfctl__tar_header(uint8_t out[MFCTL_TAR_BLOCK], const char *name, uint64_t size,
                       uint64_t mtime);
int mfctl__tar_open(struct mfctl_tar *t, struct mf_ctx *ctx, const char *path);
/* One member whose content is `a` (alen bytes) followed by `b` (blen; b may be NULL). */
int mfctl__tar_put(struct mfctl_tar *t, struct mf_ctx *ctx, const char *name, uint64_t mtime,
                   const void *a, size_t alen, const void *b, size_t blen);
/* The end-of-archive blocks, then sync, close, rename into place; MF_E_IO. */
int mfctl__tar_finish(struct mfctl_tar *t, struct mf_ctx *ctx);
void mfctl__tar_abort(struct mfctl_tar *t);

#endif /* MFCTL_CMD_SAMPLES_H */
