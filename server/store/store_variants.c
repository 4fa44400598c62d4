/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The variants domain of the store, both backends (struct mf_store_variants_ops, semantics in
 * store.h; migration 12): the variants of a model version, each its own blob with its own
 * signed release and the needs of the device classes that may run it (docs/rollouts.md,
 * "Model variants"). What the check-in's variant rule reads (director/director_variant.h).
 */
#include "store/store_engine.h"

#include <stdio.h>
#include <string.h>

#define VARIANT_COLUMNS                                                                            \
    "x.model, x.version, x.variant, x.sha256, x.size, x.created_at, x.variant_rank,"               \
    " x.min_ram_mb, x.min_storage_mb, x.accelerator, x.int8, x.fp16, x.class_tag,"                 \
    " x.release_digest, x.fallback"
/* Of an existing version only: the variant rides on the version's row. */
#define VERSION_EXISTS                                                                             \
    " WHERE EXISTS (SELECT 1 FROM model_versions v JOIN models m ON m.id = v.model_id"             \
    " WHERE m.name = ? AND v.version = ?)"
/* By the version's upload order, then rank, then name (byte order on both). */
#define VARIANTS_LIST(C)                                                                           \
    "SELECT " VARIANT_COLUMNS " FROM model_variants x JOIN models m ON m.name = x.model"           \
    " JOIN model_versions v ON v.model_id = m.id AND v.version = x.version"                        \
    " WHERE x.model = ? AND (? = '' OR x.version = ?) AND (? = 0 OR x.release_digest <> '')"       \
    " ORDER BY v.id, x.variant_rank, x.variant" C

static const struct mf_sql sql_variant_insert =
    MF_SQL("INSERT INTO model_variants(model, version, variant, sha256, size, created_at,"
           " variant_rank, min_ram_mb, min_storage_mb, accelerator, int8, fp16, class_tag,"
           " fallback) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?" VERSION_EXISTS,
           "inserting a variant");
static const struct mf_sql sql_variant_get =
    MF_SQL("SELECT " VARIANT_COLUMNS " FROM model_variants x"
           " WHERE x.model = ? AND x.version = ? AND x.variant = ?",
           "variant lookup");
static const struct mf_sql sql_variants_list = MF_SQL_ORDERED(VARIANTS_LIST, "listing variants");
static const struct mf_sql sql_variant_release_set =
    MF_SQL("UPDATE model_variants SET release_digest = ?, release = ?"
           " WHERE model = ? AND version = ? AND variant = ? AND release_digest = ''",
           "attaching a variant's release");
static const struct mf_sql sql_variant_release_get =
    MF_SQL("SELECT release FROM model_variants WHERE model = ? AND version = ? AND variant = ?"
           " AND release_digest <> ''",
           "variant release lookup");

static int variants_insert(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_variant *v)
{
    const struct mf_store_variant_needs *n = &v->needs;
    int64_t changed = 0;
    int err = mf_store__run(
        &changed, s, NULL, ctx, &sql_variant_insert, NULL, NULL, "ttttiiiiitiititt", v->model,
        v->version, v->variant, v->sha256, (int64_t)v->size, v->created_at, v->rank,
        (int64_t)n->min_ram_mb, (int64_t)n->min_storage_mb, n->accelerator, (int64_t)n->int8,
        (int64_t)n->fp16, n->class_tag, (int64_t)v->fallback, v->model, v->version);

    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "variant '%s' of %s/%s exists already", v->variant,
                       v->model, v->version);
    if (err == MF_OK && changed == 0)
        return mf_fail(ctx, MF_E_NOTFOUND, "no version '%s' of model '%s'", v->version, v->model);
    return err;
}

static void read_variant(struct mf_store_variant *out, const struct mf_store_cursor *row)
{
    struct mf_store_variant_needs *n = &out->needs;

    memset(out, 0, sizeof(*out));
    mf_store__cols(
        row, 0, "ttttuiiuutnnttn", MF_STORE_TEXT(out->model), MF_STORE_TEXT(out->version),
        MF_STORE_TEXT(out->variant), MF_STORE_TEXT(out->sha256), &out->size, &out->created_at,
        &out->rank, &n->min_ram_mb, &n->min_storage_mb, MF_STORE_TEXT(n->accelerator), &n->int8,
        &n->fp16, MF_STORE_TEXT(n->class_tag), MF_STORE_TEXT(out->release_digest), &out->fallback);
}

static int take_variant(void *payload, const struct mf_store_cursor *row)
{
    read_variant(payload, row);
    return MF_OK;
}

static int variants_get(struct mf_store_variant *out, struct mf_store *s, struct mf_ctx *ctx,
                        const char *model, const char *version, const char *variant)
{
    int found = 0;
    int err = mf_store__first(&found, s, NULL, ctx, &sql_variant_get, take_variant, out, "ttt",
                              model, version, variant);

    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no variant '%s' of %s/%s", variant, model, version);
    return err;
}

static int visit_variant(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_variant v;

    read_variant(&v, row);
    return ((mf_store_variant_fn)w->fn)(w->payload, &v);
}

static int variants_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         const char *version, int released_only, mf_store_variant_fn fn,
                         void *payload)
{
    const char *only = version ? version : "";

    return mf_store__list(s, ctx, &sql_variants_list, visit_variant, (void (*)(void))fn, payload,
                          "ttti", model, only, only, (int64_t)(released_only != 0));
}

static int variants_release_set(struct mf_store *s, struct mf_ctx *ctx,
                                const struct mf_store_variant *v, const void *env, size_t len)
{
    char missing[3 * MF_STORE_NAME_SIZE + 48];

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "release envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    (void)snprintf(missing, sizeof(missing), "no staged variant '%s' of %s/%s", v->variant,
                   v->model, v->version);
    return mf_store__change(s, NULL, ctx, MF_E_STATE, missing, &sql_variant_release_set, "tbttt",
                            v->release_digest, env, len, v->model, v->version, v->variant);
}

struct release_row {
    struct mf_dynbuf *out;
    struct mf_ctx *ctx;
};

static int take_release(void *payload, const struct mf_store_cursor *row)
{
    const struct release_row *e = payload;

    mf_dynbuf__free(e->out);
    return mf_store__col_envelope(e->out, e->ctx, row, 0, "variant release");
}

static int variants_release_get(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx,
                                const char *model, const char *version, const char *variant)
{
    struct release_row e = {out, ctx};
    int found = 0;
    int err;

    mf_dynbuf__init(out, &ctx->alloc, 1);
    err = mf_store__first(&found, s, NULL, ctx, &sql_variant_release_get, take_release, &e, "ttt",
                          model, version, variant);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no release of variant '%s' of %s/%s", variant, model,
                      version);
    return err;
}

/* clang-format off */
const struct mf_store_variants_ops mf_store__variants_ops = {
    .variant_insert = variants_insert, .variant_get = variants_get,
    .variants_list = variants_list, .variant_release_set = variants_release_set,
    .variant_release_get = variants_release_get,
};
/* clang-format on */
