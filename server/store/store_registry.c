/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry domain of the store, both backends (struct mf_store_registry_ops, semantics
 * in store.h): model versions, their signed releases, trust documents and precomputed
 * deltas, which is what a check-in is answered from (and what the store generation of
 * migration 6 counts changes of).
 */
#include "store/store_engine.h"

#include <stdio.h>
#include <string.h>

/* Every version row is read through this one column list (read_version's order). */
#define VERSION_SELECT                                                                             \
    "SELECT m.name, v.version, v.sha256, v.size, v.created_at, v.sequence, v.security_floor,"      \
    " v.release_digest, v.promoted, v.chunks_sha256 FROM model_versions v JOIN models m ON m.id "  \
    "= v.model_id"
#define VERSIONS_LIST(C) VERSION_SELECT " ORDER BY m.name" C ", v.id"
#define DELTA_COLUMNS "model, from_sha256, to_sha256, delta_sha256, size, format, created_at"

/* The catalogue of this domain. */
static const struct mf_sql sql_model_insert =
    MF_SQL("INSERT INTO models(name, created_at) VALUES(?, ?) ON CONFLICT(name) DO NOTHING",
           "inserting a model");
static const struct mf_sql sql_version_insert =
    MF_SQL("INSERT INTO model_versions(model_id, version, sha256, size, created_at)"
           " SELECT id, ?, ?, ?, ? FROM models WHERE name = ?",
           "inserting a version");
static const struct mf_sql sql_version_get =
    MF_SQL(VERSION_SELECT " WHERE m.name = ? AND v.version = ?", "version lookup");
/* Publish order (the row id), not the version string, decides what "newest" means. */
static const struct mf_sql sql_version_latest =
    MF_SQL(VERSION_SELECT " WHERE m.name = ? ORDER BY v.id DESC LIMIT 1", "version lookup");
/* The release sequence, signed by the data team, decides what "newest" means. */
static const struct mf_sql sql_release_latest =
    MF_SQL(VERSION_SELECT " WHERE m.name = ? AND v.sequence > 0 ORDER BY v.sequence DESC LIMIT 1",
           "version lookup");
/* The channel default (migration 9): the release promoted last, not the newest published. */
static const struct mf_sql sql_promoted_latest =
    MF_SQL(VERSION_SELECT " WHERE m.name = ? AND v.sequence > 0 AND v.promoted > 0"
                          " ORDER BY v.promoted DESC LIMIT 1",
           "version lookup");
static const struct mf_sql sql_versions_list = MF_SQL_ORDERED(VERSIONS_LIST, "listing versions");
/* PostgreSQL runs at READ COMMITTED: the model's row is locked so two releases of one model
 * cannot both pass the sequence check (SQLite's BEGIN IMMEDIATE already serialises them); a
 * model that does not exist locks nothing and the UPDATE finds no staged version. */
static const struct mf_sql sql_release_lock =
    MF_SQL_PG_ONLY("SELECT id FROM models WHERE name = ? FOR UPDATE", "locking the model");
static const struct mf_sql sql_release_top =
    MF_SQL("SELECT coalesce(max(v.sequence), 0) FROM model_versions v JOIN models m"
           " ON m.id = v.model_id WHERE m.name = ?",
           "reading the release sequence");
static const struct mf_sql sql_release_set =
    MF_SQL("UPDATE model_versions SET sequence = ?, security_floor = ?,"
           " release_digest = ?, release = ?, promoted = ?, chunks_sha256 = ?"
           " WHERE version = ? AND sequence = 0"
           " AND model_id = (SELECT id FROM models WHERE name = ?)",
           "attaching a release");
/* Under the model's lock (sql_release_lock), so two promotions never take one number. */
static const struct mf_sql sql_promotion_read =
    MF_SQL("SELECT v.promoted, (SELECT max(p.promoted) FROM model_versions p"
           " WHERE p.model_id = v.model_id) FROM model_versions v JOIN models m"
           " ON m.id = v.model_id WHERE m.name = ? AND v.version = ? AND v.sequence > 0",
           "reading a promotion");
static const struct mf_sql sql_release_promote =
    MF_SQL("UPDATE model_versions SET promoted = ? WHERE version = ?"
           " AND model_id = (SELECT id FROM models WHERE name = ?)",
           "promoting a release");
static const struct mf_sql sql_release_get =
    MF_SQL("SELECT v.release FROM model_versions v JOIN models m ON m.id = v.model_id"
           " WHERE m.name = ? AND v.version = ? AND v.sequence > 0",
           "release lookup");
#define TRUST_PUT(now)                                                                             \
    "INSERT INTO trust_docs(kind, version, envelope, created_at) VALUES(?, ?, ?, " now ")"
static const struct mf_sql sql_trust_put = MF_SQL_STAMPED(TRUST_PUT, "storing a trust document");
static const struct mf_sql sql_trust_latest =
    MF_SQL("SELECT envelope, version FROM trust_docs WHERE kind = ? ORDER BY version DESC LIMIT 1",
           "trust document lookup");
static const struct mf_sql sql_roots_after =
    MF_SQL_LIST("SELECT version, envelope FROM trust_docs WHERE kind = ? AND version > ?"
                " ORDER BY version LIMIT ?",
                "listing roots");
static const struct mf_sql sql_delta_insert =
    MF_SQL("INSERT INTO deltas(" DELTA_COLUMNS ") VALUES(?, ?, ?, ?, ?, ?, ?)"
           " ON CONFLICT(from_sha256, to_sha256) DO NOTHING",
           "storing a delta");
static const struct mf_sql sql_delta_find = MF_SQL(
    "SELECT " DELTA_COLUMNS " FROM deltas WHERE from_sha256 = ? AND to_sha256 = ?", "delta lookup");
static const struct mf_sql sql_deltas_list =
    MF_SQL_LIST("SELECT " DELTA_COLUMNS " FROM deltas WHERE model = ?"
                " ORDER BY created_at DESC, to_sha256, from_sha256 LIMIT ?",
                "listing deltas");
static const struct mf_sql sql_delta_count =
    MF_SQL("SELECT count(*) FROM deltas", "counting deltas");

static int version_insert_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                             void *arg)
{
    const struct mf_store_version *v = arg;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_model_insert, NULL, NULL, "ti", v->model,
                            v->created_at);

    if (err == MF_OK)
        err = mf_store__run(NULL, s, tx, ctx, &sql_version_insert, NULL, NULL, "ttiit", v->version,
                            v->sha256, (int64_t)v->size, v->created_at, v->model);
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "version '%s' of model '%s' exists already", v->version,
                       v->model);
    return err;
}

static int registry_version_insert(struct mf_store *s, struct mf_ctx *ctx,
                                   const struct mf_store_version *v)
{
    return mf_store__in_tx(s, ctx, version_insert_tx, (void *)v);
}

static void read_version(struct mf_store_version *out, const struct mf_store_cursor *row)
{
    mf_store__cols(row, 0, "tttuiuutut", MF_STORE_TEXT(out->model), MF_STORE_TEXT(out->version),
                   MF_STORE_TEXT(out->sha256), &out->size, &out->created_at, &out->sequence,
                   &out->security_floor, MF_STORE_TEXT(out->release_digest), &out->promoted,
                   MF_STORE_TEXT(out->chunks_sha256));
}

static int take_version(void *payload, const struct mf_store_cursor *row)
{
    read_version(payload, row);
    return MF_OK;
}

/* Runs `q` with one or two text parameters and reads its first row as a version. */
static int version_query(struct mf_store_version *out, struct mf_store *s, struct mf_ctx *ctx,
                         const struct mf_sql *q, const char *p1, const char *p2)
{
    int found = 0;
    int err = p2 ? mf_store__first(&found, s, NULL, ctx, q, take_version, out, "tt", p1, p2)
                 : mf_store__first(&found, s, NULL, ctx, q, take_version, out, "t", p1);

    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no such version of model '%s'", p1);
    return err;
}

static int registry_version_get(struct mf_store_version *out, struct mf_store *s,
                                struct mf_ctx *ctx, const char *model, const char *version)
{
    return version_query(out, s, ctx, &sql_version_get, model, version);
}

static int registry_version_latest(struct mf_store_version *out, struct mf_store *s,
                                   struct mf_ctx *ctx, const char *model)
{
    return version_query(out, s, ctx, &sql_version_latest, model, NULL);
}

static int registry_release_latest(struct mf_store_version *out, struct mf_store *s,
                                   struct mf_ctx *ctx, const char *model)
{
    return version_query(out, s, ctx, &sql_release_latest, model, NULL);
}

static int visit_version(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_version v;

    read_version(&v, row);
    return ((mf_store_version_fn)w->fn)(w->payload, &v);
}

MF_STORE_LISTING(registry_versions_list, mf_store_version_fn, &sql_versions_list, visit_version)

struct release_args {
    const struct mf_store_version *v;
    const void *env;
    size_t len;
};

static int release_set_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct release_args *a = arg;
    const struct mf_store_version *v = a->v;
    char missing[2 * MF_STORE_NAME_SIZE + 48];
    int64_t top = 0;
    int found = 0;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_release_lock, NULL, NULL, "t", v->model);

    if (err == MF_OK)
        err = mf_store__first(&found, s, tx, ctx, &sql_release_top, mf_store__take_i64, &top, "t",
                              v->model);
    if (err < 0)
        return err;
    if (v->sequence <= (uint64_t)top)
        return mf_fail(ctx, MF_E_STATE,
                       "release sequence %llu of model '%s' is not above the released %llu",
                       (unsigned long long)v->sequence, v->model, (unsigned long long)top);
    (void)snprintf(missing, sizeof(missing), "no staged version '%s' of model '%s'", v->version,
                   v->model);
    /* The model's first release is promoted at once: no fleet runs an older one to protect. */
    return mf_store__change(s, tx, ctx, MF_E_NOTFOUND, missing, &sql_release_set, "iitbittt",
                            (int64_t)v->sequence, (int64_t)v->security_floor, v->release_digest,
                            a->env, a->len, (int64_t)(top == 0), v->chunks_sha256, v->version,
                            v->model);
}

static int registry_release_set(struct mf_store *s, struct mf_ctx *ctx,
                                const struct mf_store_version *v, const void *env, size_t len)
{
    struct release_args a = {v, env, len};

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "release envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    return mf_store__in_tx(s, ctx, release_set_tx, &a);
}

/* An envelope lookup's first row: the envelope (column 0) and a number after it. */
struct envelope_row {
    struct mf_dynbuf *out;
    struct mf_ctx *ctx;
    const char *what;
    uint64_t version; /* column 1, when the statement has one */
    int with_version;
};

static int take_envelope(void *payload, const struct mf_store_cursor *row)
{
    struct envelope_row *e = payload;

    if (e->with_version)
        e->version = (uint64_t)mf_store__col_i64(row, 1);
    return mf_store__col_envelope(e->out, e->ctx, row, 0, e->what);
}

static int registry_release_get(struct mf_dynbuf *out, struct mf_store *s, struct mf_ctx *ctx,
                                const char *model, const char *version)
{
    struct envelope_row e = {out, ctx, "release", 0, 0};
    int found = 0;
    int err;

    mf_dynbuf__init(out, &ctx->alloc, 1);
    err = mf_store__first(&found, s, NULL, ctx, &sql_release_get, take_envelope, &e, "tt", model,
                          version);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no release");
    return err;
}

static int registry_trust_put(struct mf_store *s, struct mf_ctx *ctx, int kind, uint64_t version,
                              const void *env, size_t len)
{
    int err;

    if (len > MF_STORE_ENVELOPE_MAX)
        return mf_fail(ctx, MF_E_LIMIT, "trust envelope of %zu bytes exceeds %u", len,
                       MF_STORE_ENVELOPE_MAX);
    err = mf_store__run(NULL, s, NULL, ctx, &sql_trust_put, NULL, NULL, "iib", (int64_t)kind,
                        (int64_t)version, env, len);
    if (err == MF_E_STATE)
        return mf_fail(ctx, MF_E_STATE, "trust document version %llu exists already",
                       (unsigned long long)version);
    return err;
}

static int registry_trust_latest(uint64_t *version_out, struct mf_dynbuf *out, struct mf_store *s,
                                 struct mf_ctx *ctx, int kind)
{
    const char *what = kind == MF_STORE_TRUST_ROOT ? "root" : "keys document";
    struct envelope_row e = {out, ctx, what, 0, 1};
    int found = 0;
    int err;

    *version_out = 0;
    mf_dynbuf__init(out, &ctx->alloc, 1);
    err = mf_store__first(&found, s, NULL, ctx, &sql_trust_latest, take_envelope, &e, "i",
                          (int64_t)kind);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no %s", what);
    if (err == MF_OK)
        *version_out = e.version;
    return err;
}

static int visit_root(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    size_t n = 0;
    const void *env = row->ops->blob(row, &n, 1);

    return ((mf_store_envelope_fn)w->fn)(w->payload, (uint64_t)mf_store__col_i64(row, 0), env, n);
}

static int registry_trust_roots_after(struct mf_store *s, struct mf_ctx *ctx, uint64_t after,
                                      size_t max, mf_store_envelope_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_roots_after, visit_root, (void (*)(void))fn, payload, "iii",
                          (int64_t)MF_STORE_TRUST_ROOT, (int64_t)after, (int64_t)max);
}

static int registry_delta_insert(struct mf_store *s, struct mf_ctx *ctx,
                                 const struct mf_store_delta *d)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_delta_insert, NULL, NULL, "ttttiti", d->model,
                         d->from_sha256, d->to_sha256, d->delta_sha256, (int64_t)d->size, d->format,
                         d->created_at);
}

static int take_delta(void *payload, const struct mf_store_cursor *row)
{
    struct mf_store_delta *out = payload;

    mf_store__cols(row, 0, "ttttuti", MF_STORE_TEXT(out->model), MF_STORE_TEXT(out->from_sha256),
                   MF_STORE_TEXT(out->to_sha256), MF_STORE_TEXT(out->delta_sha256), &out->size,
                   MF_STORE_TEXT(out->format), &out->created_at);
    return MF_OK;
}

static int registry_delta_find(struct mf_store_delta *out, struct mf_store *s, struct mf_ctx *ctx,
                               const char *from_sha256, const char *to_sha256)
{
    int found = 0;
    int err;

    memset(out, 0, sizeof(*out));
    err = mf_store__first(&found, s, NULL, ctx, &sql_delta_find, take_delta, out, "tt", from_sha256,
                          to_sha256);
    if (err == MF_OK && !found)
        err = mf_fail(ctx, MF_E_NOTFOUND, "no delta");
    return err;
}

static int visit_delta(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_delta d = {0};

    (void)take_delta(&d, row);
    return ((mf_store_delta_fn)w->fn)(w->payload, &d);
}

static int registry_deltas_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                                size_t max, mf_store_delta_fn fn, void *payload)
{
    return mf_store__list(s, ctx, &sql_deltas_list, visit_delta, (void (*)(void))fn, payload, "ti",
                          model, (int64_t)max);
}

static int registry_delta_count(int64_t *count_out, struct mf_store *s, struct mf_ctx *ctx)
{
    int found = 0;

    *count_out = 0;
    return mf_store__first(&found, s, NULL, ctx, &sql_delta_count, mf_store__take_i64, count_out,
                           "");
}

static int registry_promoted_latest(struct mf_store_version *out, struct mf_store *s,
                                    struct mf_ctx *ctx, const char *model)
{
    return version_query(out, s, ctx, &sql_promoted_latest, model, NULL);
}

struct promote_args {
    const char *model, *version;
};

static int read_promotion(void *payload, const struct mf_store_cursor *row)
{
    int64_t *p = payload;

    p[0] = mf_store__col_i64(row, 0);
    p[1] = mf_store__col_i64(row, 1);
    return MF_OK;
}

static int promote_tx(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx, void *arg)
{
    const struct promote_args *a = arg;
    int64_t p[2] = {0, 0}; /* this release's promotion, the model's newest */
    int found = 0;
    int err = mf_store__run(NULL, s, tx, ctx, &sql_release_lock, NULL, NULL, "t", a->model);

    if (err == MF_OK)
        err = mf_store__first(&found, s, tx, ctx, &sql_promotion_read, read_promotion, p, "tt",
                              a->model, a->version);
    if (err == MF_OK && !found)
        return mf_fail(ctx, MF_E_NOTFOUND, "version '%s' of model '%s' is not released", a->version,
                       a->model);
    if (err < 0 || (p[0] > 0 && p[0] == p[1]))
        return err; /* the newest promotion already: what was asked */
    return mf_store__run(NULL, s, tx, ctx, &sql_release_promote, NULL, NULL, "itt", p[1] + 1,
                         a->version, a->model);
}

static int registry_release_promote(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                                    const char *version)
{
    struct promote_args a = {model, version};

    return mf_store__in_tx(s, ctx, promote_tx, &a);
}

/* Each op of the table is the function named after it with the domain's prefix. */
#define OP(name) .name = registry_##name
const struct mf_store_registry_ops mf_store__registry_ops = {
    OP(version_insert), OP(version_get),       OP(version_latest),  OP(versions_list),
    OP(release_set),    OP(release_get),       OP(release_latest),  OP(trust_put),
    OP(trust_latest),   OP(trust_roots_after), OP(delta_insert),    OP(delta_find),
    OP(delta_count),    OP(deltas_list),       OP(release_promote), OP(promoted_latest),
};
#undef OP
