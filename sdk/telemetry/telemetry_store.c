/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Persisting the totals through the platform port: a header (magic, format, slot size), the
 * slots, and a SHA-256 of both, written to "<name>.tmp", synced and renamed over "<name>",
 * so a power cut leaves either the old or the new totals, never a torn mix (FIELD-NOTES 1).
 * The layout is the in-memory one: the file never leaves the device that wrote it, and a
 * build with another layout reads it as foreign (the slot size is in the header). A file of
 * format 1 (slots without the scorecard, which is their prefix) loads with empty scorecards.
 */
#include "mf_telemetry_int.h"

#include "mf/ct.h"
#include "mf_sha256.h"

#include <string.h>

#define STORE_MAGIC 0x4d46544cu /* "MFTL" */
#define STORE_FORMAT 2u         /* 2: slots with a scorecard; 1 (before it) still loads */

struct store_header {
    uint32_t magic, format, slot_size, slots;
};

static void header(struct store_header *h, uint32_t format)
{
    h->magic = STORE_MAGIC;
    h->format = format;
    h->slot_size =
        (uint32_t)(format == 1u ? sizeof(struct telemetry_slot_v1) : sizeof(struct telemetry_slot));
    h->slots = MF_TELEMETRY_MAX_VERSIONS;
}

/* The digest of the header and the first `slot_size` bytes of every slot (a format-1 file
 * holds only that prefix of each). */
static void digest(uint8_t out[MF_SHA256_DIGEST_LEN], const struct store_header *h,
                   const struct mf_telemetry *t)
{
    struct mf_sha256 c;

    mf_sha256__init(&c);
    mf_sha256__update(&c, h, sizeof(*h));
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++)
        mf_sha256__update(&c, &t->slot[i], h->slot_size);
    mf_sha256__final(&c, out);
}

int mf_telemetry_save(mf_telemetry *t)
{
    const mf_platform_ops *p = &t->platform;
    struct store_header h;
    uint8_t sum[MF_SHA256_DIGEST_LEN];

    if (!t->has_platform)
        return MF_E_INVALID;
    header(&h, STORE_FORMAT);
    digest(sum, &h, t);
    {
        const void *parts[] = {&h, t->slot, sum};
        const size_t lens[] = {sizeof(h), sizeof(t->slot), sizeof(sum)};

        return mf_telemetry__write_object(p, t->tmp_name, t->name, parts, lens, 3);
    }
}

int mf_telemetry__write_object(const mf_platform_ops *p, const char *tmp_name, const char *name,
                               const void *const *parts, const size_t *lens, size_t n)
{
    mf_platform_file *f = NULL;
    int err = p->open(p->payload, &f, tmp_name, MF_PLATFORM_OPEN_WRITE);

    if (err < 0)
        return err;
    for (size_t i = 0; err == MF_OK && i < n; i++)
        err = p->write(p->payload, f, parts[i], lens[i]);
    if (err == MF_OK)
        err = p->sync(p->payload, f);
    p->close(p->payload, f);
    if (err == MF_OK)
        err = p->rename(p->payload, tmp_name, name);
    return err;
}

int mf_telemetry__read_exact(const mf_platform_ops *p, mf_platform_file *f, uint64_t off, void *buf,
                             size_t len)
{
    size_t got = 0;

    while (got < len) {
        size_t n = 0;
        int err = p->read_at(p->payload, &n, f, off + got, (uint8_t *)buf + got, len - got);

        if (err < 0)
            return err;
        if (n == 0)
            return MF_E_INVALID;
        got += n;
    }
    return MF_OK;
}

int mf_telemetry_load(mf_telemetry *t)
{
    const mf_platform_ops *p = &t->platform;
    struct store_header h, want;
    uint8_t sum[MF_SHA256_DIGEST_LEN], calc[MF_SHA256_DIGEST_LEN];
    mf_platform_file *f = NULL;
    uint64_t off = sizeof(h);
    int err;

    if (!t->has_platform)
        return MF_E_INVALID;
    err = p->open(p->payload, &f, t->name, MF_PLATFORM_OPEN_READ);
    if (err == MF_E_NOTFOUND)
        return MF_OK; /* nothing saved yet */
    if (err < 0)
        return err;
    memset(t->slot, 0, sizeof(t->slot));
    err = mf_telemetry__read_exact(p, f, 0, &h, sizeof(h));
    header(&want, err == MF_OK && h.format == 1u ? 1u : STORE_FORMAT);
    if (err == MF_OK && memcmp(&h, &want, sizeof(h)) != 0)
        err = MF_E_INVALID;
    for (int i = 0; err == MF_OK && i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        err = mf_telemetry__read_exact(p, f, off, &t->slot[i], h.slot_size);
        off += h.slot_size;
    }
    if (err == MF_OK)
        err = mf_telemetry__read_exact(p, f, off, sum, sizeof(sum));
    p->close(p->payload, f);
    if (err == MF_OK) {
        digest(calc, &h, t);
        if (!mf_ct_memeq(calc, sum, sizeof(sum)))
            err = MF_E_INVALID;
    }
    if (err < 0)
        memset(t->slot, 0, sizeof(t->slot)); /* never half-loaded totals */
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        t->last_use[i] = 0;
        t->run[i].active = 0; /* a restart is a new activation */
    }
    t->energy_slot = -1;
    return err;
}
