/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backend-neutral pieces of the offload ops (store_offload.c): both backends keep a
 * histogram's bins as one text column, and both collect the inputs a deletion orphans.
 */
#ifndef MF_SERVER_STORE_OFFLOAD_H
#define MF_SERVER_STORE_OFFLOAD_H

#include "store/store.h"

/* Room for MF_STORE_HIST_BINS comma-separated uint64 counts and a NUL. */
#define MF_STORE_BINS_TEXT_MAX (MF_STORE_HIST_BINS * 21)

/* Writes the bins as "c0,c1,...". */
void mf_store__bins_format(char out[MF_STORE_BINS_TEXT_MAX], const uint64_t *bins);
/* Parses them back; MF_E_INVALID (with a message) for anything else. */
int mf_store__bins_parse(uint64_t *bins_out, struct mf_ctx *ctx, const char *text);

/* The distinct input digests of deleted rows, checked for remaining references. */
struct mf_store_shas {
    struct mf_dynbuf buf; /* MF_SHA256_HEX_LEN + 1 bytes per digest */
    size_t n;
};

void mf_store__shas_init(struct mf_store_shas *l, struct mf_ctx *ctx);
/* Appends `sha` unless it is there already; MF_E_NOMEM / MF_E_LIMIT (1M digests). */
int mf_store__shas_add(struct mf_store_shas *l, struct mf_ctx *ctx, const char *sha);
const char *mf_store__shas_at(const struct mf_store_shas *l, size_t i);
void mf_store__shas_free(struct mf_store_shas *l);

/* Checks a sample's fixed-size fields before a backend writes it; MF_E_INVALID. */
int mf_store__sample_check(struct mf_ctx *ctx, const struct mf_store_sample *smp);

#endif /* MF_SERVER_STORE_OFFLOAD_H */
