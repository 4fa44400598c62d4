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
    "                 [--until T] [--kind hard|audit] [--min-teacher-confidence X] OUTDIR\n"       \
    "       mfctl [global options] samples delete --device ID\n"                                   \
    "export pages through GET /v1/admin/samples (role data) and writes OUTDIR/samples.jsonl\n"     \
    "(one object per sample, field \"row\" indexes the arrays), inputs.npy (uint8 [N, L];\n"       \
    "[total] plus input_offsets.npy int64 [N+1] when input lengths differ), student.npy and\n"     \
    "teacher.npy (float32 [N, classes]; NaN rows for unlabelled samples). T is a Unix time\n"      \
    "in seconds (received_at in [since, until)); X in [0, 1] keeps only labelled samples\n"        \
    "the teacher was at least that sure of. Files appear complete or not at all.\n"                \
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

/* A .npy file written as a stream: the header is reserved at open and filled at close. */
struct mfctl_npy {
    FILE *f;
    const char *descr;
    char path[4096]; /* final name; the data goes to path + ".part" until close */
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

#endif /* MFCTL_CMD_SAMPLES_H */
