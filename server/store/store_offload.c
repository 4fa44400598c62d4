/* SPDX-License-Identifier: Apache-2.0 */
/* Backend-neutral pieces of the offload store ops (see store_offload.h). */
#include "store/store_offload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAS_MAX (1u << 20)
#define SHA_SLOT (MF_SHA256_HEX_LEN + 1)

void mf_store__bins_format(char out[MF_STORE_BINS_TEXT_MAX], const uint64_t *bins)
{
    size_t n = 0;

    out[0] = '\0';
    for (int i = 0; i < MF_STORE_HIST_BINS; i++)
        n += (size_t)snprintf(out + n, MF_STORE_BINS_TEXT_MAX - n, "%s%" PRIu64, i ? "," : "",
                              bins[i]);
}

int mf_store__bins_parse(uint64_t *bins_out, struct mf_ctx *ctx, const char *text)
{
    const char *p = text;

    for (int i = 0; i < MF_STORE_HIST_BINS; i++) {
        char *end;

        if (*p < '0' || *p > '9')
            return mf_fail(ctx, MF_E_INVALID, "stored histogram is malformed at bin %d", i);
        bins_out[i] = strtoull(p, &end, 10);
        p = end;
        if (*p == ',' && i + 1 < MF_STORE_HIST_BINS)
            p++;
    }
    if (*p)
        return mf_fail(ctx, MF_E_INVALID, "stored histogram has more than %d bins",
                       MF_STORE_HIST_BINS);
    return MF_OK;
}

void mf_store__shas_init(struct mf_store_shas *l, struct mf_ctx *ctx)
{
    mf_dynbuf__init(&l->buf, &ctx->alloc, (size_t)SHAS_MAX * SHA_SLOT);
    l->n = 0;
}

int mf_store__shas_add(struct mf_store_shas *l, struct mf_ctx *ctx, const char *sha)
{
    char slot[SHA_SLOT];
    int err;

    /* Deletions are by device or by age: few distinct inputs per call, a linear scan is
     * cheaper than a hash table here. */
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(mf_store__shas_at(l, i), sha) == 0)
            return MF_OK;
    }
    memset(slot, 0, sizeof(slot));
    (void)snprintf(slot, sizeof(slot), "%s", sha);
    err = mf_dynbuf__append(&l->buf, slot, sizeof(slot));
    if (err < 0)
        return mf_fail(ctx, err, "too many inputs in one deletion (%zu)", l->n);
    l->n++;
    return MF_OK;
}

const char *mf_store__shas_at(const struct mf_store_shas *l, size_t i)
{
    return (const char *)l->buf.data + i * SHA_SLOT;
}

void mf_store__shas_free(struct mf_store_shas *l)
{
    mf_dynbuf__free(&l->buf);
    l->n = 0;
}

static int one_of(const char *s, const char *const *set)
{
    for (; *set; set++) {
        if (strcmp(s, *set) == 0)
            return 1;
    }
    return 0;
}

int mf_store__sample_check(struct mf_ctx *ctx, const struct mf_store_sample *smp)
{
    static const char *const kinds[] = {"hard", "audit", NULL};

    if (strlen(smp->id) != MF_STORE_SAMPLE_ID_LEN)
        return mf_fail(ctx, MF_E_INVALID, "sample id '%s' is not %d hex digits", smp->id,
                       MF_STORE_SAMPLE_ID_LEN);
    if (!one_of(smp->kind, kinds))
        return mf_fail(ctx, MF_E_INVALID, "sample kind '%s' is not hard or audit", smp->kind);
    if (strlen(smp->input_sha256) != MF_SHA256_HEX_LEN)
        return mf_fail(ctx, MF_E_INVALID, "sample %s has no input digest", smp->id);
    return MF_OK;
}
