/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The progress record of a download: "<part>.prog" next to the .part it describes, written
 * with mf_agent__store_write() (temp, sync, durable rename), so a power cut leaves the old
 * or the new record, never a torn one. It is written only after the .part itself was
 * synced up to `verified`, so the record never claims bytes that are not durable.
 *
 *   "MFPR" u8 format=1, 32-byte sha256 of the object, u64 size, u64 verified (LE),
 *   u8 etag length, etag bytes
 *
 * The record is a hint, not a trust anchor: a resume re-reads and re-verifies the prefix
 * against the signed chunk hashes (or the final digest for deltas) before using it.
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define PROG_MAGIC "MFPR"
#define PROG_FORMAT 1
#define PROG_FIXED (4 + 1 + MF_SHA256_LEN + 8 + 8 + 1)

void mf_agent__put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t mf_agent__get_u64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int mf_agent__progress_name(struct mf_agent *a, char *out, const char *part)
{
    int n = snprintf(out, MF_AGENT_STORE_NAME_MAX, "%s.prog", part);

    if (n < 0 || n >= MF_AGENT_STORE_NAME_MAX)
        return mf_fail(&a->ctx, MF_E_LIMIT, "storage name %s.prog too long", part);
    return MF_OK;
}

int mf_agent__progress_save(struct mf_agent *a, const char *part,
                            const struct mf_agent_progress *pr)
{
    uint8_t buf[PROG_FIXED + MF_HTTP_ETAG_MAX];
    char name[MF_AGENT_STORE_NAME_MAX];
    size_t elen = strlen(pr->etag);
    int err = mf_agent__progress_name(a, name, part);

    if (err < 0)
        return err;
    memcpy(buf, PROG_MAGIC, 4);
    buf[4] = PROG_FORMAT;
    memcpy(buf + 5, pr->sha256, MF_SHA256_LEN);
    mf_agent__put_u64(buf + 5 + MF_SHA256_LEN, pr->size);
    mf_agent__put_u64(buf + 13 + MF_SHA256_LEN, pr->verified);
    buf[PROG_FIXED - 1] = (uint8_t)elen;
    memcpy(buf + PROG_FIXED, pr->etag, elen);
    return mf_agent__store_write(a, name, buf, PROG_FIXED + elen, 0);
}

int mf_agent__progress_load(struct mf_agent *a, struct mf_agent_progress *out, const char *part)
{
    char name[MF_AGENT_STORE_NAME_MAX];
    struct mf_dynbuf buf;
    const uint8_t *p;
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_agent__progress_name(a, name, part);
    if (err >= 0)
        err = mf_agent__store_read(a, &buf, name, PROG_FIXED + MF_HTTP_ETAG_MAX + 1);
    if (err < 0)
        return err;
    p = buf.data;
    if (buf.len < PROG_FIXED || memcmp(p, PROG_MAGIC, 4) != 0 || p[4] != PROG_FORMAT ||
        buf.len != PROG_FIXED + (size_t)p[PROG_FIXED - 1] || p[PROG_FIXED - 1] > MF_HTTP_ETAG_MAX) {
        mf_dynbuf__free(&buf);
        return mf_fail(&a->ctx, MF_E_INVALID, "%s is not a progress record", name);
    }
    memcpy(out->sha256, p + 5, MF_SHA256_LEN);
    out->size = mf_agent__get_u64(p + 5 + MF_SHA256_LEN);
    out->verified = mf_agent__get_u64(p + 13 + MF_SHA256_LEN);
    memcpy(out->etag, p + PROG_FIXED, p[PROG_FIXED - 1]);
    out->etag[p[PROG_FIXED - 1]] = '\0';
    mf_dynbuf__free(&buf);
    if (out->verified > out->size)
        return mf_fail(&a->ctx, MF_E_INVALID, "%s claims %llu of %llu bytes", name,
                       (unsigned long long)out->verified, (unsigned long long)out->size);
    return MF_OK;
}

void mf_agent__progress_drop(struct mf_agent *a, const char *part, int with_part)
{
    char name[MF_AGENT_STORE_NAME_MAX];

    if (mf_agent__progress_name(a, name, part) >= 0)
        (void)a->plat.remove(a->plat.payload, name);
    if (with_part)
        (void)a->plat.remove(a->plat.payload, part);
}
