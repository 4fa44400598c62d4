/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL checkin_begin (store.h): the store work of the check-ins that arrived together.
 * A check-in whose models the node's cache knows unpinned needs only its device row's UPDATE;
 * those of a batch go in one statement over arrays (one execution, one commit, one round
 * trip for all of them), which is what bounds check-ins on PostgreSQL: the backend's work
 * per statement (bench/server/README.md). A device's second check-in in the batch shares
 * its first's row. The others run one statement each.
 */
#include "store/pg_store.h"

#include "mf/ct.h"
#include "mf_dynbuf.h"
#include "mf_hex.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Check-ins that went through a batch's statement, process-wide (pg_store.h). */
static atomic_ullong batched_total;

uint64_t mf_pg__checkin_batched(void)
{
    return atomic_load(&batched_total);
}

/* Model names never contain '/' (protocol names), so one text parameter carries them all. */
static int join_models(char *out, size_t size, struct mf_ctx *ctx, const char *const *models,
                       size_t n)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(out + len, size - len, "%s%s", i ? "/" : "", models[i]);

        if (k < 0 || (size_t)k >= size - len)
            return mf_fail(ctx, MF_E_LIMIT, "more models than a check-in carries");
        len += (size_t)k;
    }
    return MF_OK;
}

/* The generation (column gen_col of the first row) and the directives of each model (from
 * column dir_col, a row each) of a result that must hold `rows` rows. */
static int take_directives(uint64_t *generation_out, struct mf_store_directives *dirs_out,
                           struct mf_ctx *ctx, const PGresult *res, size_t rows, size_t n_models,
                           int gen_col, int dir_col)
{
    if ((size_t)PQntuples(res) != rows)
        return mf_fail(ctx, MF_E_STATE, "check-in of %zu models read %d directive rows", n_models,
                       PQntuples(res));
    *generation_out = (uint64_t)mf_pg__col_i64(res, 0, gen_col);
    for (size_t i = 0; i < n_models; i++)
        mf_pg__directives_row(&dirs_out[i], res, (int)i, dir_col);
    return MF_OK;
}

static int begin_full(uint64_t *generation_out, uint64_t *first_out,
                      struct mf_store_directives *dirs_out, PGconn *c, struct mf_ctx *ctx,
                      const char *device_id, const uint8_t *cred_hash, unsigned n_seq,
                      const char *models, size_t n_models, int64_t now)
{
    /* The device row's UPDATE (last_seen, the sequence block above the session's floor,
     * without waiting for the WAL flush: see raise_epoch), then one row per model with its
     * directives, in model order; no model: one row with NULL directives. The models come
     * through a sub-select so the planner never sees their value: its estimate is then the
     * same for every call, and the prepared statement settles on one generic plan instead
     * of planning each check-in anew. */
    static const char sql[] =
        "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"
        " d AS (UPDATE devices SET last_seen = $1, assign_seq = greatest(assign_seq,"
        "  current_setting('mf.seq_floor')::bigint) + $3 FROM async WHERE device_id = $2"
        "  AND credential_hash = $5"
        "  RETURNING id, device_id, channel, assign_seq)"
        " SELECT d.assign_seq, (SELECT generation FROM store_meta WHERE id = 1), m.ord, "
        /* clang-format off */
        MF_PG_DIRECTIVE_COLUMNS("m.model")
        /* clang-format on */
        " FROM d LEFT JOIN unnest(string_to_array((SELECT $4::text), '/')) WITH ORDINALITY"
        " AS m(model, ord) ON true ORDER BY m.ord";
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_i64(&p, now);
    mf_pg__param_text(&p, device_id);
    mf_pg__param_i64(&p, n_seq);
    mf_pg__param_text(&p, models);
    mf_pg__param_blob(&p, cred_hash, MF_SHA256_LEN);
    err = mf_pg__query(&res, c, ctx, sql, &p, "beginning a check-in");
    if (err == MF_OK && PQntuples(res) == 0)
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    if (err == MF_OK)
        err = take_directives(generation_out, dirs_out, ctx, res, n_models ? n_models : 1, n_models,
                              1, 3);
    if (err == MF_OK)
        *first_out = (uint64_t)mf_pg__col_i64(res, 0, 0) - n_seq + 1;
    PQclear(res);
    return err;
}

/* The directives of each model and the generation, read in one snapshot (after the device's
 * row was written by begin_unpinned or the batch's statement). */
static int directives_now(uint64_t *generation_out, struct mf_store_directives *dirs_out, PGconn *c,
                          struct mf_ctx *ctx, const char *device_id, const char *models,
                          size_t n_models)
{
    static const char sql[] = "SELECT (SELECT generation FROM store_meta WHERE id = 1), m.ord, "
        /* clang-format off */
        MF_PG_DIRECTIVE_COLUMNS("m.model")
        /* clang-format on */
        " FROM devices d JOIN unnest(string_to_array((SELECT $2::text), '/')) WITH ORDINALITY"
        " AS m(model, ord) ON true WHERE d.device_id = $1 ORDER BY m.ord";
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_text(&p, device_id);
    mf_pg__param_text(&p, models);
    err = mf_pg__query(&res, c, ctx, sql, &p, "reading a check-in's directives");
    if (err == MF_OK)
        err = take_directives(generation_out, dirs_out, ctx, res, n_models, n_models, 0, 2);
    PQclear(res);
    return err;
}

/*
 * begin_full for a check-in whose models the hint names all unpinned: the same UPDATE
 * without the pin reads. PostgreSQL starts every sub-plan of a statement on each execution
 * whether it runs or not, so only a statement without them saves their cost (a quarter of
 * the statement's time under pgbench). Should the store have moved past the hint's
 * generation, the directives and the new generation are read afterwards, in one snapshot.
 */
static int begin_unpinned(uint64_t *generation_out, uint64_t *first_out,
                          struct mf_store_directives *dirs_out, PGconn *c, struct mf_ctx *ctx,
                          const char *device_id, const uint8_t *cred_hash, unsigned n_seq,
                          const char *models, size_t n_models, int64_t now,
                          const struct mf_store_pin_hint *hint)
{
    static const char sql[] =
        "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"
        " d AS (UPDATE devices SET last_seen = $1, assign_seq = greatest(assign_seq,"
        "  current_setting('mf.seq_floor')::bigint) + $3 FROM async WHERE device_id = $2"
        "  AND credential_hash = $4 RETURNING channel, assign_seq)"
        " SELECT d.assign_seq, (SELECT generation FROM store_meta WHERE id = 1), d.channel"
        " FROM d";
    char channel[MF_STORE_NAME_SIZE];
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    mf_pg__param_i64(&p, now);
    mf_pg__param_text(&p, device_id);
    mf_pg__param_i64(&p, n_seq);
    mf_pg__param_blob(&p, cred_hash, MF_SHA256_LEN);
    err = mf_pg__query(&res, c, ctx, sql, &p, "beginning a check-in");
    if (err == MF_OK && PQntuples(res) != 1)
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    if (err == MF_OK) {
        *first_out = (uint64_t)mf_pg__col_i64(res, 0, 0) - n_seq + 1;
        *generation_out = (uint64_t)mf_pg__col_i64(res, 0, 1);
        mf_pg__col_text(channel, sizeof(channel), res, 0, 2);
    }
    PQclear(res);
    if (err == MF_OK && *generation_out != hint->generation)
        return directives_now(generation_out, dirs_out, c, ctx, device_id, models, n_models);
    for (size_t i = 0; err == MF_OK && i < n_models; i++) {
        memset(&dirs_out[i], 0, sizeof(dirs_out[i]));
        (void)snprintf(dirs_out[i].channel, sizeof(dirs_out[i].channel), "%s", channel);
    }
    return err;
}

static int begin_on(struct mf_store_checkin *c, PGconn *conn, const char *models)
{
    uint64_t all = c->n_models >= 64 ? UINT64_MAX : (UINT64_C(1) << c->n_models) - 1;
    int err = mf_pg__raise_epoch(conn, c->ctx);

    if (err < 0)
        return err;
    if (c->hint && c->n_models > 0 && (c->hint->unpinned & all) == all)
        return begin_unpinned(&c->generation, &c->first, c->dirs, conn, c->ctx, c->device_id,
                              c->cred_hash, c->n_seq, models, c->n_models, c->now, c->hint);
    return begin_full(&c->generation, &c->first, c->dirs, conn, c->ctx, c->device_id, c->cred_hash,
                      c->n_seq, models, c->n_models, c->now);
}

/* One check-in on its own statement. */
static int begin_one(struct mf_store_checkin *c, PGconn *conn)
{
    char names[MF_STORE_CHECKIN_MAX_MODELS * MF_STORE_NAME_SIZE];
    struct mf_pg_session *sess;
    int err = join_models(names, sizeof(names), c->ctx, c->models, c->n_models);

    if (err < 0)
        return err;
    err = begin_on(c, conn, names);
    /* Re-established under the statement: as pg_device_reserve_sequence. */
    sess = mf_pg__session(conn);
    if (err == MF_E_IO && sess && !sess->floor_set && PQstatus(conn) == CONNECTION_OK)
        err = begin_on(c, conn, names);
    return err;
}

/* Whether item i can go in the batch's statement: every model unpinned as of the hint. */
static int batchable(const struct mf_store_checkin *c)
{
    uint64_t all = c->n_models >= 64 ? UINT64_MAX : (UINT64_C(1) << c->n_models) - 1;

    return c->hint && c->n_models > 0 && (c->hint->unpinned & all) == all;
}

/* An array parameter of the batch's statement: an element per check-in, each at most a
 * quoted device id or a hex digest and a comma. */
#define BATCH_ARRAY_MAX (MF_STORE_CHECKIN_BATCH_MAX * (MF_STORE_NAME_SIZE + 8) + 8)

/* A device of the batch's statement. An UPDATE changes a row once however many rows of its
 * FROM match it, so the check-ins of one device (with one credential) share its row: the
 * row reserves the numbers of all of them and they split the block in batch order. */
struct batch_row {
    const char *device_id;
    size_t item;    /* its first check-in; the others follow through next[] */
    unsigned n_seq; /* numbers for all of them */
    int64_t now;    /* the latest of their times */
};

/* The batch's rows and, per check-in, the next check-in of its row (NO_ITEM: none). */
#define NO_ITEM SIZE_MAX
struct batch {
    struct batch_row rows[MF_STORE_CHECKIN_BATCH_MAX];
    size_t next[MF_STORE_CHECKIN_BATCH_MAX];
    size_t last[MF_STORE_CHECKIN_BATCH_MAX]; /* per row: its last check-in so far */
    uint8_t in[MF_STORE_CHECKIN_BATCH_MAX];  /* per check-in: it is one of the rows' */
    size_t n_rows, n_items;
};

/* Puts item i in the batch: in its device's row, or a new row. A device's check-in with
 * another credential than the row's stays out (it runs alone and is refused alone). */
static void batch_add(struct batch *b, const struct mf_store_checkin *items, size_t i)
{
    const struct mf_store_checkin *c = &items[i];
    struct batch_row *r;

    b->next[i] = NO_ITEM;
    for (size_t k = 0; k < b->n_rows; k++) {
        r = &b->rows[k];
        if (strcmp(r->device_id, c->device_id) != 0)
            continue;
        if (!mf_ct_memeq(items[r->item].cred_hash, c->cred_hash, MF_SHA256_LEN))
            return;
        b->next[b->last[k]] = i;
        b->last[k] = i;
        r->n_seq += c->n_seq;
        r->now = c->now > r->now ? c->now : r->now;
        b->in[i] = 1;
        b->n_items++;
        return;
    }
    r = &b->rows[b->n_rows];
    *r = (struct batch_row){c->device_id, i, c->n_seq, c->now};
    b->last[b->n_rows++] = i;
    b->in[i] = 1;
    b->n_items++;
}

/* Orders the statement's rows by device id, so that concurrent batches (other nodes) lock
 * the rows they share in one order. The next[] chains hang off items, not rows: sorting
 * keeps them. */
static int by_device(const void *a, const void *b)
{
    return strcmp(((const struct batch_row *)a)->device_id,
                  ((const struct batch_row *)b)->device_id);
}

/* The arrays of the batch's statement: device ids, credential hashes (hex), numbers to
 * reserve, times; device ids are protocol names ([A-Za-z0-9._-]), quoted all the same. */
static int batch_arrays(struct mf_dynbuf a[4], const struct mf_store_checkin *items,
                        const struct batch_row *rows, size_t n)
{
    int err = MF_OK;

    for (size_t k = 0; k < 4 && err == MF_OK; k++)
        err = mf_dynbuf__append(&a[k], "{", 1);
    for (size_t i = 0; i < n && err == MF_OK; i++) {
        const struct mf_store_checkin *c = &items[rows[i].item];
        char hex[MF_SHA256_LEN * 2 + 1];
        const char *sep = i ? "," : "";

        if (strpbrk(c->device_id, "\"{},") != NULL)
            return MF_E_INVALID;
        mf_hex__encode(hex, c->cred_hash, MF_SHA256_LEN);
        err = mf_dynbuf__appendf(&a[0], "%s\"%s\"", sep, c->device_id);
        if (err >= 0)
            err = mf_dynbuf__appendf(&a[1], "%s%s", sep, hex);
        if (err >= 0)
            err = mf_dynbuf__appendf(&a[2], "%s%u", sep, rows[i].n_seq);
        if (err >= 0)
            err = mf_dynbuf__appendf(&a[3], "%s%lld", sep, (long long)rows[i].now);
    }
    for (size_t k = 0; k < 4 && err >= 0; k++)
        err = mf_dynbuf__append(&a[k], "}", 1); /* the buffer keeps a NUL after it */
    return err < 0 ? err : MF_OK;
}

/* Fills in one check-in of a row the statement returned: `first` its block's first number,
 * `generation` and `channel` the row's. */
static void batch_take(struct mf_store_checkin *c, uint64_t first, uint64_t generation,
                       const char *channel, PGconn *conn)
{
    c->first = first;
    c->generation = generation;
    if (c->generation != c->hint->generation) {
        char names[MF_STORE_CHECKIN_MAX_MODELS * MF_STORE_NAME_SIZE];

        c->err = join_models(names, sizeof(names), c->ctx, c->models, c->n_models);
        if (c->err == MF_OK)
            c->err = directives_now(&c->generation, c->dirs, conn, c->ctx, c->device_id, names,
                                    c->n_models);
        return;
    }
    for (size_t m = 0; m < c->n_models; m++) {
        memset(&c->dirs[m], 0, sizeof(c->dirs[m]));
        (void)snprintf(c->dirs[m].channel, sizeof(c->dirs[m].channel), "%s", channel);
    }
}

/* Takes the rows of the batch's statement: a row per device that still holds the
 * credential; its block is split among the device's check-ins in batch order. */
static int batch_results(struct mf_store_checkin *items, const struct batch *b, const PGresult *res,
                         PGconn *conn)
{
    uint8_t seen[MF_STORE_CHECKIN_BATCH_MAX] = {0};

    for (int r = 0; r < PQntuples(res); r++) {
        int64_t ord = mf_pg__col_i64(res, r, 0);
        const struct batch_row *row;
        char channel[MF_STORE_NAME_SIZE];
        uint64_t first, generation;

        if (ord < 1 || (uint64_t)ord > b->n_rows || seen[ord - 1])
            return MF_E_STATE;
        seen[ord - 1] = 1;
        row = &b->rows[ord - 1];
        first = (uint64_t)mf_pg__col_i64(res, r, 1) - row->n_seq + 1;
        generation = (uint64_t)mf_pg__col_i64(res, r, 2);
        mf_pg__col_text(channel, sizeof(channel), res, r, 3);
        for (size_t i = row->item; i != NO_ITEM; i = b->next[i]) {
            batch_take(&items[i], first, generation, channel, conn);
            first += items[i].n_seq;
        }
    }
    for (size_t k = 0; k < b->n_rows; k++) {
        for (size_t i = b->rows[k].item; !seen[k] && i != NO_ITEM; i = b->next[i])
            items[i].err =
                mf_fail(items[i].ctx, MF_E_AUTH,
                        "device '%s' does not hold that credential (any more)", items[i].device_id);
    }
    return MF_OK;
}

/*
 * begin_unpinned for n check-ins of distinct devices in one statement. MF_OK when it ran
 * (each item's err set); an error when it did not, and then it changed nothing (one
 * statement): the caller runs the items one by one instead.
 */
static int begin_batch(struct mf_store_checkin *items, struct batch *b, PGconn *conn)
{
    static const char sql[] =
        "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"
        " x AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])"
        "  WITH ORDINALITY AS x(id, cred, n, now, ord)),"
        " d AS (UPDATE devices SET last_seen = x.now, assign_seq = greatest(devices.assign_seq,"
        "  current_setting('mf.seq_floor')::bigint) + x.n FROM async, x"
        "  WHERE devices.device_id = x.id AND devices.credential_hash = decode(x.cred, 'hex')"
        "  RETURNING x.ord, devices.assign_seq, devices.channel)"
        " SELECT d.ord, d.assign_seq, (SELECT generation FROM store_meta WHERE id = 1), d.channel"
        " FROM d";
    struct mf_ctx *ctx = items[b->rows[0].item].ctx;
    struct mf_dynbuf a[4];
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    qsort(b->rows, b->n_rows, sizeof(b->rows[0]), by_device);
    for (size_t k = 0; k < 4; k++)
        mf_dynbuf__init(&a[k], NULL, BATCH_ARRAY_MAX);
    err = mf_pg__raise_epoch(conn, ctx);
    if (err == MF_OK && batch_arrays(a, items, b->rows, b->n_rows) < 0)
        err = mf_fail(ctx, MF_E_LIMIT, "a batch of %zu check-ins does not fit its arrays",
                      b->n_items);
    for (size_t k = 0; k < 4 && err == MF_OK; k++)
        mf_pg__param_text(&p, (const char *)a[k].data);
    if (err == MF_OK)
        err = mf_pg__query(&res, conn, ctx, sql, &p, "beginning a batch of check-ins");
    if (err == MF_OK)
        err = batch_results(items, b, res, conn);
    if (err == MF_OK)
        atomic_fetch_add(&batched_total, b->n_items);
    PQclear(res);
    for (size_t k = 0; k < 4; k++)
        mf_dynbuf__free(&a[k]);
    return err;
}

int mf_pg__checkin_begin(struct mf_store *base, struct mf_store_checkin *items, size_t n)
{
    struct batch b;
    PGconn *conn;
    int err;

    for (size_t i = 0; i < n; i++) {
        items[i].generation = items[i].first = 0;
        items[i].err = MF_OK;
    }
    err = mf_pg__get(&conn, base, items[0].ctx);
    if (err < 0) {
        for (size_t i = 1; i < n; i++)
            items[i].err = mf_fail(items[i].ctx, err, "%s", mf_ctx__errmsg(items[0].ctx));
        return err;
    }
    memset(b.in, 0, sizeof(b.in));
    b.n_rows = b.n_items = 0;
    for (size_t i = 0; i < n && i < MF_STORE_CHECKIN_BATCH_MAX; i++) {
        if (batchable(&items[i]))
            batch_add(&b, items, i);
    }
    /* A failed statement changed nothing: its check-ins run one by one like the rest. */
    if (b.n_items < 2 || begin_batch(items, &b, conn) < 0)
        memset(b.in, 0, sizeof(b.in));
    for (size_t i = 0; i < n; i++) {
        if (i >= MF_STORE_CHECKIN_BATCH_MAX || !b.in[i])
            items[i].err = begin_one(&items[i], conn);
    }
    mf_pg__put(base, conn);
    for (size_t i = 0; i < n; i++) {
        if (items[i].err < 0)
            return items[i].err;
    }
    return MF_OK;
}
