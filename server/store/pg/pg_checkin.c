/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PostgreSQL check-in path (struct mf_store_checkin_ops): checkin_begin (store.h), the store work
 * of the check-ins that arrived together, in one statement over arrays (one execution, one commit,
 * one round trip for all of them), which is what bounds check-ins on PostgreSQL: the backend's work
 * per statement (bench/server/README.md). A check-in whose models the node's cache knows unpinned
 * needs only its device row's UPDATE; the statement reads the directives of the others' models too,
 * per (device, model) pair, and takes the form without those reads when there are none. A device's
 * further check-ins in the batch share its first's row. A check-in without models, a device's
 * check-in with another credential than its first's, and a batch whose statement failed run one
 * statement each (pg_checkin_one.c, which also has the epoch and device_reserve_sequence).
 * One module with pg_conn.c: the backend's ops table there names this file's check-in ops,
 * and these take their connections from its pool.
 */
#include "store/pg/pg_store.h"

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

/* An array parameter of the batch's statement: an element per check-in, each at most a
 * quoted device id or a hex digest and a comma. */
#define BATCH_ARRAY_MAX (MF_STORE_CHECKIN_BATCH_MAX * (MF_STORE_NAME_SIZE + 8) + 8)
/* A pair array: an element per model of each check-in, a quoted model name or a number. */
#define PAIR_ARRAY_MAX                                                                             \
    (MF_STORE_CHECKIN_BATCH_MAX * MF_STORE_CHECKIN_MAX_MODELS * (MF_STORE_NAME_SIZE + 8) + 8)

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
    /* Per check-in: its directives are read by the statement (a model the hint does not
     * name unpinned, or no hint), one (row, model) pair per model. */
    uint8_t reads[MF_STORE_CHECKIN_BATCH_MAX];
    size_t n_rows, n_items, n_reads;
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

/* batch_add, and whether the statement reads i's directives. */
static void batch_add_checkin(struct batch *b, const struct mf_store_checkin *items, size_t i)
{
    batch_add(b, items, i);
    b->reads[i] = b->in[i] && !mf_pg__hinted_unpinned(&items[i]);
    b->n_reads += b->reads[i];
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
/* Whether model m of item i was already paired with its row by an earlier check-in of the
 * row (a device's two check-ins naming one model read it once). */
static int pair_seen(const struct batch *b, const struct mf_store_checkin *items, size_t row_item,
                     size_t i, const char *model)
{
    for (size_t j = row_item; j != i && j != NO_ITEM; j = b->next[j]) {
        for (size_t m = 0; b->reads[j] && m < items[j].n_models; m++) {
            if (strcmp(items[j].models[m], model) == 0)
                return 1;
        }
    }
    return 0;
}

/* The statement's (row, model) pairs, arrays 4 and 5: for each check-in whose directives it
 * reads, its row's place in the statement (1-based) and each of its models. */
static int pair_arrays(struct mf_dynbuf a[6], const struct batch *b,
                       const struct mf_store_checkin *items)
{
    size_t n = 0;
    int err = mf_dynbuf__append(&a[4], "{", 1);

    if (err == MF_OK)
        err = mf_dynbuf__append(&a[5], "{", 1);
    for (size_t k = 0; k < b->n_rows && err == MF_OK; k++) {
        for (size_t i = b->rows[k].item; i != NO_ITEM && err == MF_OK; i = b->next[i]) {
            for (size_t m = 0; b->reads[i] && m < items[i].n_models && err == MF_OK; m++) {
                const char *model = items[i].models[m];

                if (strpbrk(model, "\"{},") != NULL)
                    return MF_E_INVALID;
                if (pair_seen(b, items, b->rows[k].item, i, model))
                    continue;
                err = mf_dynbuf__appendf(&a[4], "%s%zu", n ? "," : "", k + 1);
                if (err >= 0)
                    err = mf_dynbuf__appendf(&a[5], "%s\"%s\"", n ? "," : "", model);
                n++;
            }
        }
    }
    if (err >= 0)
        err = mf_dynbuf__append(&a[4], "}", 1);
    if (err >= 0)
        err = mf_dynbuf__append(&a[5], "}", 1);
    return err < 0 ? err : MF_OK;
}

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
        c->err = mf_pg__checkin_directives(c, conn);
        return;
    }
    for (size_t m = 0; m < c->n_models; m++)
        mf_store__directives_unpinned(&c->dirs[m], channel);
}

/* The directives of each model of c from the statement's rows r0 .. r0 + n - 1 of c's
 * device: the row of its (row, model) pair. */
static int take_pairs(struct mf_store_checkin *c, const PGresult *res, int r0, int n)
{
    for (size_t m = 0; m < c->n_models; m++) {
        int found = 0;

        for (int r = r0; r < r0 + n && !found; r++) {
            char model[MF_STORE_NAME_SIZE];

            if (PQgetisnull(res, r, 3))
                continue;
            mf_pg__col_text(model, sizeof(model), res, r, 3);
            if (strcmp(model, c->models[m]) == 0) {
                mf_pg__directives_row(&c->dirs[m], res, r, 4);
                found = 1;
            }
        }
        if (!found)
            return mf_fail(c->ctx, MF_E_STATE, "check-in batch: no directives of %s for %s",
                           c->models[m], c->device_id);
    }
    return MF_OK;
}

/*
 * Takes the rows of the batch's statement: per device that still holds the credential one
 * row, or with pairs (b->n_reads) one per pair of the device, in a run (ORDER BY). The
 * device's block is split among its check-ins in batch order; a check-in whose directives
 * the statement read takes them from its pairs, the others the hint's.
 */
static int batch_results(struct mf_store_checkin *items, const struct batch *b, const PGresult *res,
                         PGconn *conn)
{
    int first_row[MF_STORE_CHECKIN_BATCH_MAX], n_res[MF_STORE_CHECKIN_BATCH_MAX];
    int paired = b->n_reads > 0, channel_col = paired ? 4 : 3;

    for (size_t k = 0; k < b->n_rows; k++)
        first_row[k] = -1, n_res[k] = 0;
    for (int r = 0; r < PQntuples(res); r++) {
        int64_t ord = mf_pg__col_i64(res, r, 0);
        size_t k = (size_t)ord - 1;

        if (ord < 1 || (uint64_t)ord > b->n_rows)
            return MF_E_STATE;
        if (first_row[k] < 0)
            first_row[k] = r;
        else if (!paired || first_row[k] + n_res[k] != r)
            return MF_E_STATE; /* one row per device, or its pairs' rows together */
        n_res[k]++;
    }
    for (size_t k = 0; k < b->n_rows; k++) {
        const struct batch_row *row = &b->rows[k];
        char channel[MF_STORE_NAME_SIZE];
        uint64_t first, generation;
        int r0 = first_row[k];

        if (r0 < 0) {
            for (size_t i = row->item; i != NO_ITEM; i = b->next[i])
                items[i].err = mf_fail(items[i].ctx, MF_E_AUTH,
                                       "device '%s' does not hold that credential (any more)",
                                       items[i].device_id);
            continue;
        }
        first = (uint64_t)mf_pg__col_i64(res, r0, 1) - row->n_seq + 1;
        generation = (uint64_t)mf_pg__col_i64(res, r0, 2);
        mf_pg__col_text(channel, sizeof(channel), res, r0, channel_col);
        for (size_t i = row->item; i != NO_ITEM; i = b->next[i]) {
            if (b->reads[i]) {
                items[i].first = first;
                items[i].generation = generation;
                items[i].err = take_pairs(&items[i], res, r0, n_res[k]);
            } else {
                batch_take(&items[i], first, generation, channel, conn);
            }
            first += items[i].n_seq;
        }
    }
    return MF_OK;
}

/*
 * begin_unpinned for n check-ins of distinct devices in one statement. MF_OK when it ran
 * (each item's err set); an error when it did not, and then it changed nothing (one
 * statement): the caller runs the items one by one instead.
 */
/* The batch statement's writes: last_seen and the sequence block of each device row that
 * matches on id and credential (`async` turns the commit's WAL wait off: raise_epoch). */
#define BATCH_SQL_UPDATE                                                                           \
    "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),"                        \
    " x AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])"              \
    "  WITH ORDINALITY AS x(id, cred, n, now, ord)),"                                              \
    " d AS (UPDATE devices SET last_seen = x.now, assign_seq = greatest(devices.assign_seq,"       \
    "  current_setting('mf.seq_floor')::bigint) + x.n FROM async, x"                               \
    "  WHERE devices.device_id = x.id AND devices.credential_hash = decode(x.cred, 'hex')"         \
    "  RETURNING x.ord, devices.id, devices.device_id, devices.assign_seq, devices.channel)"

static int begin_batch(struct mf_store_checkin *items, struct batch *b, PGconn *conn)
{
    /* Every model unpinned as of the hints: no directive reads, so none of their sub-plans
     * (PostgreSQL starts each on every execution, run or not: see begin_unpinned). */
    static const char sql_unpinned[] =
        BATCH_SQL_UPDATE " SELECT d.ord, d.assign_seq, (SELECT generation FROM store_meta"
                         " WHERE id = 1), d.channel FROM d";
    /* With (row, model) pairs, $5 and $6: the directives of each, a row per pair (a device
     * without pairs gets one row, model NULL), a device's rows together. */
    static const char sql_pairs[] =
        BATCH_SQL_UPDATE ", m AS (SELECT * FROM unnest($5::bigint[], $6::text[]) AS m(ord, model))"
                         " SELECT d.ord, d.assign_seq, (SELECT generation FROM store_meta"
                         " WHERE id = 1), m.model, "
        /* clang-format off */
        MF_STORE_DIRECTIVE_COLUMNS("m.model", MF_SQL_C)
        /* clang-format on */
        " FROM d LEFT JOIN m ON m.ord = d.ord ORDER BY d.ord";
    struct mf_ctx *ctx = items[b->rows[0].item].ctx;
    size_t n_arrays = b->n_reads ? 6 : 4;
    struct mf_dynbuf a[6];
    struct mf_pg_params p = {0};
    PGresult *res = NULL;
    int err;

    qsort(b->rows, b->n_rows, sizeof(b->rows[0]), by_device);
    for (size_t k = 0; k < 6; k++)
        mf_dynbuf__init(&a[k], NULL, k < 4 ? BATCH_ARRAY_MAX : PAIR_ARRAY_MAX);
    err = mf_pg__raise_epoch(conn, ctx);
    if (err == MF_OK && (batch_arrays(a, items, b->rows, b->n_rows) < 0 ||
                         (b->n_reads && pair_arrays(a, b, items) < 0)))
        err = mf_fail(ctx, MF_E_LIMIT, "a batch of %zu check-ins does not fit its arrays",
                      b->n_items);
    for (size_t k = 0; k < n_arrays && err == MF_OK; k++)
        mf_pg__param_text(&p, (const char *)a[k].data);
    if (err == MF_OK)
        err = mf_pg__query(&res, conn, ctx, b->n_reads ? sql_pairs : sql_unpinned, &p,
                           "beginning a batch of check-ins");
    if (err == MF_OK)
        err = batch_results(items, b, res, conn);
    if (err == MF_OK)
        atomic_fetch_add(&batched_total, b->n_items);
    PQclear(res);
    for (size_t k = 0; k < 6; k++)
        mf_dynbuf__free(&a[k]);
    return err;
}

static int pg_checkin_begin(struct mf_store *base, struct mf_store_checkin *items, size_t n)
{
    struct batch b;
    PGconn *conn;
    int err;

    mf_store__checkin_reset(items, n);
    err = mf_pg__get(&conn, base, items[0].ctx);
    if (err < 0) {
        for (size_t i = 1; i < n; i++)
            items[i].err = mf_fail(items[i].ctx, err, "%s", mf_ctx__errmsg(items[0].ctx));
        return err;
    }
    memset(b.in, 0, sizeof(b.in));
    b.n_rows = b.n_items = 0;
    memset(b.reads, 0, sizeof(b.reads));
    b.n_reads = 0;
    for (size_t i = 0; i < n && i < MF_STORE_CHECKIN_BATCH_MAX; i++) {
        if (items[i].n_models > 0)
            batch_add_checkin(&b, items, i);
    }
    /* A failed statement changed nothing: its check-ins run one by one like the rest. */
    if (b.n_items < 2 || begin_batch(items, &b, conn) < 0)
        memset(b.in, 0, sizeof(b.in));
    for (size_t i = 0; i < n; i++) {
        if (i >= MF_STORE_CHECKIN_BATCH_MAX || !b.in[i])
            items[i].err = mf_pg__checkin_one(&items[i], conn);
    }
    mf_pg__put(base, conn);
    return mf_store__checkin_result(items, n);
}

/* clang-format off */
const struct mf_store_checkin_ops mf_store__pg_checkin_ops = {
    .device_reserve_sequence = mf_pg__device_reserve_sequence, .checkin_begin = pg_checkin_begin,
};
/* clang-format on */
