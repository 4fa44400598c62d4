/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SQLite check-in path (struct mf_store_checkin_ops): the assignment sequence and
 * checkin_begin, on the check-in connection whose commits do not wait for the disk, after
 * the store epoch was raised durably once per open store (docs/architecture.md, "Check-in
 * path"). The check-ins that arrive together share one transaction.
 * One module with sqlite_conn.c: the backend's ops table there names these ops, and they
 * run on its connections and lock.
 */
#include "store/sqlite/sqlite_store.h"

#include <stdio.h>
#include <string.h>

/* Under the lock: opens the check-in connection (synchronous=NORMAL) on first use. Its
 * commits checkpoint the WAL only past 10000 pages (about 40 MiB) instead of 1000: the
 * checkpoint (two fsyncs) runs under the store lock, and with a check-in commit per batch
 * the default stalled every check-in several times a second
 * (bench/server/README.md, "Store design figures"). */
static int checkins_conn_locked(struct mf_sqlite_store *s, struct mf_ctx *ctx)
{
    int rc;

    if (s->checkins.db)
        return MF_OK;
    rc = sqlite3_open_v2(s->location, &s->checkins.db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc == SQLITE_OK) {
        (void)sqlite3_busy_timeout(s->checkins.db, 5000);
        rc = sqlite3_exec(
            s->checkins.db,
            "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=10000;",
            NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        return MF_OK;
    (void)mf_fail(ctx, MF_E_IO, "cannot open the check-in connection to '%s': %s", s->location,
                  s->checkins.db ? sqlite3_errmsg(s->checkins.db) : sqlite3_errstr(rc));
    (void)sqlite3_close(s->checkins.db);
    s->checkins.db = NULL;
    return MF_E_IO;
}

/* Runs `call` on the check-in connection, whose commits do not wait for the disk (WAL,
 * synchronous=NORMAL): what it writes survives a crash of the process but may be lost with
 * the machine's power, which the caller's data tolerates (docs/architecture.md, "Check-in
 * path"). The next durable commit makes it durable too: fsync covers the whole WAL file. */
#define NOT_DURABLE(s, ctx, call)                                                                  \
    do {                                                                                           \
        err = checkins_conn_locked(s, ctx);                                                        \
        if (err == MF_OK) {                                                                        \
            (s)->c = &(s)->checkins;                                                               \
            err = (call);                                                                          \
            (s)->c = &(s)->durable;                                                                \
        }                                                                                          \
    } while (0)

/* Raises the store's epoch with a durable commit, once per open store, before the first
 * sequence number it issues without waiting for the disk: every number it issues is then
 * above any number issued under an earlier epoch, whether or not that one reached the disk. */
static int epoch_locked(struct mf_sqlite_store *s, struct mf_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    int err, rc;

    if (s->floor_set)
        return MF_OK;
    err = mf_sqlite__run(s, ctx, "BEGIN IMMEDIATE");
    if (err < 0)
        return err;
    err = mf_sqlite__prepare(
        &st, s, ctx, "UPDATE store_meta SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch");
    if (err == MF_OK) {
        rc = sqlite3_step(st);
        err = rc == SQLITE_ROW ? mf_store__epoch_floor(&s->floor, ctx, sqlite3_column_int64(st, 0))
                               : mf_sqlite__fail(ctx, s, "raising the store epoch");
    }
    mf_sqlite__finish(s, st);
    if (err == MF_OK)
        err = mf_sqlite__run(s, ctx, "COMMIT");
    if (err < 0)
        (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);
    else
        s->floor_set = 1;
    return err;
}

static int reserve_locked(uint64_t *first_out, struct mf_sqlite_store *s, struct mf_ctx *ctx,
                          const char *device_id, unsigned n)
{
    sqlite3_stmt *st = NULL;
    int err = mf_sqlite__prepare(&st, s, ctx,
                                 "UPDATE devices SET assign_seq = max(assign_seq, ?3) + ?1"
                                 " WHERE device_id = ?2 RETURNING assign_seq");
    int rc;

    if (err < 0)
        return err;
    sqlite3_bind_int(st, 1, (int)n);
    sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)s->floor);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *first_out = (uint64_t)sqlite3_column_int64(st, 0) - n + 1;
    else if (rc == SQLITE_DONE)
        err = mf_fail(ctx, MF_E_NOTFOUND, "unknown device '%s'", device_id);
    else
        err = mf_sqlite__fail(ctx, s, "reserving assignment sequence numbers");
    mf_sqlite__finish(s, st);
    return err;
}

static int sqlite_device_reserve_sequence(uint64_t *first_out, struct mf_store *base,
                                          struct mf_ctx *ctx, const char *device_id, unsigned n)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    int err;

    *first_out = 0;
    mf_sqlite__lock(s);
    err = epoch_locked(s, ctx);
    if (err == MF_OK)
        NOT_DURABLE(s, ctx, reserve_locked(first_out, s, ctx, device_id, n));
    mf_sqlite__unlock(s);
    return err;
}

/* last_seen and the sequence block in one statement (one commit), with the generation and
 * the device's channel (into `channel`, MF_STORE_NAME_SIZE bytes). */
static int begin_locked(uint64_t *generation_out, uint64_t *first_out, char *channel,
                        struct mf_sqlite_store *s, struct mf_ctx *ctx, const char *device_id,
                        const uint8_t cred_hash[MF_SHA256_LEN], unsigned n_seq, int64_t now)
{
    sqlite3_stmt *st = NULL;
    int err = mf_sqlite__prepare(
        &st, s, ctx,
        "UPDATE devices SET last_seen = ?1, assign_seq = max(assign_seq, ?3) + ?4"
        " WHERE device_id = ?2 AND credential_hash = ?5 RETURNING assign_seq,"
        " (SELECT generation FROM store_meta WHERE id = 1), channel");
    int rc;

    if (err < 0)
        return err;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, device_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)s->floor);
    sqlite3_bind_int(st, 4, (int)n_seq);
    sqlite3_bind_blob(st, 5, cred_hash, MF_SHA256_LEN, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *first_out = (uint64_t)sqlite3_column_int64(st, 0) - n_seq + 1;
        *generation_out = (uint64_t)sqlite3_column_int64(st, 1);
        mf_sqlite__text_col(channel, MF_STORE_NAME_SIZE, st, 2);
    } else if (rc == SQLITE_DONE) {
        err = mf_fail(ctx, MF_E_AUTH, "device '%s' does not hold that credential (any more)",
                      device_id);
    } else {
        err = mf_sqlite__fail(ctx, s, "beginning a check-in");
    }
    mf_sqlite__finish(s, st);
    return err;
}

/* Inside the batch's transaction: begin_locked and the directives of each model. */
static int begin_one_locked(struct mf_sqlite_store *s, struct mf_store_checkin *c)
{
    char channel[MF_STORE_NAME_SIZE] = "";
    int err = begin_locked(&c->generation, &c->first, channel, s, c->ctx, c->device_id,
                           c->cred_hash, c->n_seq, c->now);

    for (size_t i = 0; err == MF_OK && i < c->n_models; i++) {
        const struct mf_store_pin_hint *h = c->hint;

        /* Read in this transaction, the generation says no pin changed since the hint's. */
        if (h && h->generation == c->generation && (h->unpinned >> i & 1u)) {
            mf_store__directives_unpinned(&c->dirs[i], channel);
        } else {
            err = mf_store__directives_read(&c->dirs[i], &s->base, mf_sqlite__tx(s), c->ctx,
                                            c->device_id, c->models[i]);
        }
    }
    return err;
}

/* Fails every item that still counts as done: their writes went with the transaction. */
static void fail_done(struct mf_store_checkin *items, size_t n, int err, const char *msg)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].err == MF_OK)
            items[i].err = mf_fail(items[i].ctx, err, "check-in not recorded: %s", msg);
    }
}

/*
 * All the check-ins of a batch in one transaction: one round of the WAL's locks, one WAL
 * write and one switch of the synchronous level for all of them. Each item's UPDATE is one
 * statement, so an item that fails (a credential no longer the device's) leaves nothing
 * behind and the others go on; an error that ends the whole transaction, or its COMMIT
 * failing, fails every item. The batch's transaction runs on the check-in connection
 * (sqlite_checkin_begin); a message for the whole batch into `msg` when it failed as a whole.
 */
static int begin_batch_locked(struct mf_sqlite_store *s, struct mf_store_checkin *items, size_t n,
                              char *msg, size_t msg_size)
{
    struct mf_ctx *ctx = items[0].ctx, *cause = ctx; /* ctx: the batch's own statements */
    int err = mf_sqlite__run(s, ctx, "BEGIN IMMEDIATE");

    for (size_t i = 0; err == MF_OK && i < n; i++) {
        items[i].err = begin_one_locked(s, &items[i]);
        /* SQLite rolled the transaction back (I/O error, full disk): all is lost. */
        if (items[i].err < 0 && sqlite3_get_autocommit(s->c->db)) {
            err = items[i].err;
            cause = items[i].ctx;
        }
    }
    if (err == MF_OK && mf_sqlite__run(s, ctx, "COMMIT") < 0) {
        err = MF_E_IO;
        (void)snprintf(msg, msg_size, "%s", mf_ctx__errmsg(ctx));
        (void)sqlite3_exec(s->c->db, "ROLLBACK", NULL, NULL, NULL);
    }
    if (err < 0 && !msg[0])
        (void)snprintf(msg, msg_size, "%s", mf_ctx__errmsg(cause));
    return err;
}

static int sqlite_checkin_begin(struct mf_store *base, struct mf_store_checkin *items, size_t n)
{
    struct mf_sqlite_store *s = mf_sqlite__from(base);
    char msg[256] = "";
    int err;

    mf_store__checkin_reset(items, n);
    mf_sqlite__lock(s);
    err = epoch_locked(s, items[0].ctx);
    if (err < 0)
        (void)snprintf(msg, sizeof(msg), "%s", mf_ctx__errmsg(items[0].ctx));
    else
        NOT_DURABLE(s, items[0].ctx, begin_batch_locked(s, items, n, msg, sizeof(msg)));
    if (err < 0 && !msg[0])
        (void)snprintf(msg, sizeof(msg), "%s", mf_ctx__errmsg(items[0].ctx));
    mf_sqlite__unlock(s);
    if (err < 0)
        fail_done(items, n, err, msg);
    return mf_store__checkin_result(items, n);
}

/* clang-format off */
const struct mf_store_checkin_ops mf_store__sqlite_checkin_ops = {
    .device_reserve_sequence = sqlite_device_reserve_sequence,
    .checkin_begin = sqlite_checkin_begin,
};
/* clang-format on */
