/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the store: what the backend-neutral ops (store_<domain>.c) need from a backend, and
 * what they share. A backend gives an engine (run one statement of the catalogue, inside a
 * transaction or on its own; run a function inside a transaction) and a cursor over the
 * current row (column as int64 / double / text / blob / null-test), so each op and each row
 * decoder is written once for both SQLite and PostgreSQL.
 *
 * The catalogue: each statement is a `struct mf_sql`, written once with `?` placeholders
 * (SQLite's syntax; `?N` names parameter N) in the text both dialects run, or as a pair where
 * the dialects really differ (RETURNING and ON CONFLICT forms aside, which both have: types,
 * collations, hex, clock functions, row locks). The PostgreSQL backend turns `?` into $1..$n
 * when it prepares the statement (mf_store__sql_to_pg), so its hot path sends only the name
 * of a statement prepared once per session.
 */
#ifndef MF_SERVER_STORE_ENGINE_H
#define MF_SERVER_STORE_ENGINE_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* A statement of the catalogue. `pg` NULL: the same text as `sqlite`. A dialect's text NULL
 * (MF_SQL_PG_ONLY): there is nothing to run on that dialect (a row lock SQLite's
 * BEGIN IMMEDIATE makes needless), and running it succeeds at once with no rows. */
struct mf_sql {
    const char *sqlite;
    const char *pg;
    const char *what; /* names the step in an error message: "token lookup" */
    int stream;       /* 1: a listing, streamed row by row (PostgreSQL: single-row mode) */
};

#define MF_SQL(text, what_)                                                                        \
    {                                                                                              \
        .sqlite = (text), .what = (what_)                                                          \
    }
#define MF_SQL_LIST(text, what_)                                                                   \
    {                                                                                              \
        .sqlite = (text), .what = (what_), .stream = 1                                             \
    }
#define MF_SQL_PAIR(sqlite_text, pg_text, what_)                                                   \
    {                                                                                              \
        .sqlite = (sqlite_text), .pg = (pg_text), .what = (what_)                                  \
    }
#define MF_SQL_PG_ONLY(pg_text, what_)                                                             \
    {                                                                                              \
        .sqlite = NULL, .pg = (pg_text), .what = (what_)                                           \
    }
/* A listing whose ORDER BY sorts text: `m` is a macro taking the collation suffix, which is
 * byte order on both (SQLite's default BINARY; PostgreSQL's "C", whatever the database's
 * locale), so both list in the same order. */
#define MF_SQL_C " COLLATE \"C\""
#define MF_SQL_ORDERED(m, what_)                                                                   \
    {                                                                                              \
        .sqlite = m(""), .pg = m(MF_SQL_C), .what = (what_), .stream = 1                           \
    }
/* A statement stamped with the database's clock (Unix seconds): `m` is a macro taking each
 * dialect's expression for "now". */
#define MF_SQL_NOW_SQLITE "strftime('%s')"
#define MF_SQL_NOW_PG "extract(epoch FROM now())::bigint"
#define MF_SQL_STAMPED(m, what_)                                                                   \
    {                                                                                              \
        .sqlite = m(MF_SQL_NOW_SQLITE), .pg = m(MF_SQL_NOW_PG), .what = (what_)                    \
    }
/* A lease claim on a work queue (jobs, the webhook outbox): the oldest row of `table` that is
 * `eligible` (WHERE text over ?2 now) becomes `taken`, owned by ?1 until ?2 + ?3, one attempt
 * more, and `returning` is read back. PostgreSQL skips rows another node has locked, so two
 * workers claiming at once take two rows instead of waiting on one; SQLite's write lock
 * serialises the claims already. */
#define MF_SQL_LEASE_CLAIM_(table, taken, eligible, returning, lock)                               \
    "UPDATE " table " SET state = '" taken "', owner = ?1, lease_until = ?2 + ?3,"                 \
    " attempts = attempts + 1 WHERE id = (SELECT id FROM " table " WHERE " eligible                \
    " ORDER BY id LIMIT 1" lock ") RETURNING " returning
#define MF_SQL_LEASE_CLAIM(table, taken, eligible, returning, what_)                               \
    MF_SQL_PAIR(MF_SQL_LEASE_CLAIM_(table, taken, eligible, returning, ""),                        \
                MF_SQL_LEASE_CLAIM_(table, taken, eligible, returning, " FOR UPDATE SKIP LOCKED"), \
                what_)

/* The end of a lease (done, failed, retried): the WHERE of an UPDATE that changes row ?1 only
 * while owner ?2 still holds it in state `taken`, so a holder whose lease another node took
 * over changes nothing. */
#define MF_SQL_LEASE_HELD(taken) " WHERE id = ?1 AND owner = ?2 AND state = '" taken "'"
/* A failed attempt's SET: the lease released, the row failed for good once it has had `max`
 * attempts, else back to state `again` for the next claim. */
#define MF_SQL_LEASE_RETRY(max, again)                                                             \
    "lease_until = 0, state = CASE WHEN attempts >= " max " THEN 'failed' ELSE '" again "' END"

/* Statement parameters, neutral: each backend binds them its own way. */
#define MF_STORE_PARAMS_MAX 16

enum mf_store_param_type {
    MF_STORE_P_TEXT = 1,
    MF_STORE_P_I64 = 2,
    MF_STORE_P_F64 = 3,
    MF_STORE_P_BLOB = 4,
};

struct mf_store_param {
    int type;        /* enum mf_store_param_type */
    const void *ptr; /* text (NUL-terminated) or blob, borrowed until the statement ran */
    size_t len;      /* blob bytes */
    int64_t i64;
    double f64;
};

struct mf_store_params {
    struct mf_store_param v[MF_STORE_PARAMS_MAX];
    int n;
};

/* The current row of a statement: valid only inside the row visitor it is handed to; the
 * text and blob pointers are borrowed for as long. NULL columns read as 0, "" and no bytes. */
struct mf_store_cursor;

struct mf_store_cursor_ops {
    int64_t (*i64)(const struct mf_store_cursor *c, int col);
    double (*f64)(const struct mf_store_cursor *c, int col);
    const char *(*text)(const struct mf_store_cursor *c, int col);
    const void *(*blob)(const struct mf_store_cursor *c, size_t *len_out, int col);
    int (*null)(const struct mf_store_cursor *c, int col);
};

struct mf_store_cursor {
    const struct mf_store_cursor_ops *ops;
    const void *impl; /* sqlite3_stmt or PGresult */
    int row;          /* PGresult row */
};

/* A row visitor: a negative return stops the walk and is returned unchanged. */
typedef int (*mf_store_row_fn)(void *payload, const struct mf_store_cursor *row);

/* A transaction in progress (the backend's: its locked connection). NULL: none, the statement
 * runs on its own. */
struct mf_store_tx;
typedef int (*mf_store_tx_fn)(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                              void *arg);

struct mf_store_engine {
    /* Runs `q` with `p` (NULL: none) in `tx` or on its own; each row goes to `fn` (NULL:
     * rows are not read). *changes_out (may be NULL): the rows it changed. MF_E_STATE for a
     * constraint violation, MF_E_IO otherwise, the message naming q->what. */
    int (*run)(int64_t *changes_out, struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
               const struct mf_sql *q, const struct mf_store_params *p, mf_store_row_fn fn,
               void *payload);
    /* Runs `fn` inside one transaction (a write lock first, so read-check-write is safe on
     * either backend as the op takes it: SQLite BEGIN IMMEDIATE; PostgreSQL row locks in
     * the op's own statements). COMMIT when it returns MF_OK, ROLLBACK otherwise; returns
     * its error or the COMMIT's. */
    int (*in_tx)(struct mf_store *s, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg);
};

/* Builds params from `types`, one letter a parameter: 't' text, 'i' int64_t, 'd' double,
 * 'h' a 32-byte hash, 'b' a blob (pointer, size_t). */
void mf_store__params(struct mf_store_params *p, const char *types, ...);

/* The statement helpers every op is written with (types as mf_store__params). run: each row
 * to fn (NULL: rows not read), *changes_out (may be NULL) the rows it changed. first: the
 * first row to fn (NULL: none), *found_out whether there was one. change: for an UPDATE or
 * DELETE that must change a row: `missing_err` with the message `missing` (a complete
 * sentence) when it changed none. */
int mf_store__run(int64_t *changes_out, struct mf_store *s, struct mf_store_tx *tx,
                  struct mf_ctx *ctx, const struct mf_sql *q, mf_store_row_fn fn, void *payload,
                  const char *types, ...);
int mf_store__first(int *found_out, struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                    const struct mf_sql *q, mf_store_row_fn fn, void *payload, const char *types,
                    ...);
int mf_store__change(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                     int missing_err, const char *missing, const struct mf_sql *q,
                     const char *types, ...);
/* The update of a row that has a state (a rollout, a distillation run), its WHERE written
 * with MF_SQL_STATE_GUARD: it changes row `id` only while the row's state is `expect_state`
 * ("" for any), on its own. Changing none is MF_E_STATE "<noun> <id> is unknown or no longer
 * <expect_state>", or MF_E_NOTFOUND ("... no longer there") when no state was expected. */
#define MF_SQL_STATE_GUARD(id, expect)                                                             \
    " WHERE id = " id " AND (" expect " = '' OR state = " expect ")"
int mf_store__change_state(struct mf_store *s, struct mf_ctx *ctx, const char *noun, int64_t id,
                           const char *expect_state, const struct mf_sql *q, const char *types,
                           ...);
int mf_store__in_tx(struct mf_store *s, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg);
/* A row visitor for a statement answering one integer (a RETURNING id, a count): column 0 to
 * *(int64_t *)payload. */
int mf_store__take_i64(void *payload, const struct mf_store_cursor *row);

/* A listing: the caller's visitor (cast back to its own type by the row visitor) and its
 * payload, handed as `payload` to `visit` for each row of `q` run on its own. */
struct mf_store_visit {
    void (*fn)(void);
    void *payload;
    struct mf_ctx *ctx;
};

int mf_store__list(struct mf_store *s, struct mf_ctx *ctx, const struct mf_sql *q,
                   mf_store_row_fn visit, void (*fn)(void), void *payload, const char *types, ...);
/* Defines the op `name` that lists every row of `q` (no parameters): `visit` decodes a row and
 * hands it to the caller's `fn` (of type `fn_type`) with its payload. */
#define MF_STORE_LISTING(name, fn_type, q, visit)                                                  \
    static int name(struct mf_store *s, struct mf_ctx *ctx, fn_type fn, void *payload)             \
    {                                                                                              \
        return mf_store__list(s, ctx, q, visit, (void (*)(void))fn, payload, "");                  \
    }
/* The same for a listing of the rows of one text key (a model, a device). */
#define MF_STORE_LISTING_OF(name, fn_type, q, visit)                                               \
    static int name(struct mf_store *s, struct mf_ctx *ctx, const char *key, fn_type fn,           \
                    void *payload)                                                                 \
    {                                                                                              \
        return mf_store__list(s, ctx, q, visit, (void (*)(void))fn, payload, "t", key);            \
    }

/* Reads the columns from `col` on into the places that follow, one letter a column: 't' text
 * into (char *dst, size_t size), truncating (MF_STORE_TEXT(field) spells both); 'i' int64_t *;
 * 'u' uint64_t *; 'n' int *; 'd' double *; 's' const char ** (borrowed, as the cursor). */
void mf_store__cols(const struct mf_store_cursor *row, int col, const char *types, ...);
#define MF_STORE_TEXT(field) (field), sizeof(field)

/* Migration, both backends: a store whose schema_version `cur` is newer than this server's
 * is refused (MF_E_STATE naming both), since older code would misread the newer tables. */
int mf_store__schema_known(struct mf_ctx *ctx, int cur);
/* checkin_begin's bookends, both backends: every item reset before, the first item's error
 * (MF_OK when none failed) after. */
void mf_store__checkin_reset(struct mf_store_checkin *items, size_t n);
int mf_store__checkin_result(const struct mf_store_checkin *items, size_t n);

/* Column readers over the cursor. text: copies into dst (truncating). */
void mf_store__col_text(char *dst, size_t size, const struct mf_store_cursor *c, int col);
static inline int64_t mf_store__col_i64(const struct mf_store_cursor *c, int col)
{
    return c->ops->i64(c, col);
}
static inline const char *mf_store__col_str(const struct mf_store_cursor *c, int col)
{
    return c->ops->text(c, col);
}

/* Copies a blob column into `out` (bounded by MF_STORE_ENVELOPE_MAX); MF_E_NOTFOUND naming
 * `what` for a NULL. */
int mf_store__col_envelope(struct mf_dynbuf *out, struct mf_ctx *ctx,
                           const struct mf_store_cursor *c, int col, const char *what);

/* The rewriting of a statement's `?` placeholders into PostgreSQL's $1..$n, outside string
 * literals and quoted identifiers: `?` is one more than the highest number so far (SQLite's
 * rule), `?N` is $N. Writes a NUL-terminated text into out; MF_E_LIMIT when it does not fit
 * in `size` bytes. */
int mf_store__sql_to_pg(char *out, size_t size, const char *sql);

/*
 * The directives of device row `d` for the model `model_expr` (an SQL expression) as five
 * columns (scopes: 1 device, 2 group: "group/version" of the first group by name that pins
 * the model, 3 channel, 4 fleet), sorted with collation suffix C (MF_SQL_C on PostgreSQL, ""
 * on SQLite); mf_store__directives_row reads them from column `col`. Shared by directives_get
 * and both backends' check-in statements.
 */
#define MF_STORE_DIRECTIVE_COLUMNS(model_expr, C)                                                  \
    "d.channel,"                                                                                   \
    " (SELECT version FROM pins WHERE scope = 1 AND target = d.device_id AND model = " model_expr  \
    "),"                                                                                           \
    " (SELECT p.target || '/' || p.version FROM pins p JOIN device_groups g ON g.grp = p.target"   \
    "   AND g.device_id = d.id WHERE p.scope = 2 AND p.model = " model_expr                        \
    "   ORDER BY p.target" C " LIMIT 1),"                                                          \
    " (SELECT version FROM pins WHERE scope = 3 AND target = d.channel AND model = " model_expr    \
    "),"                                                                                           \
    " (SELECT version FROM pins WHERE scope = 4 AND target = '*' AND model = " model_expr ")"
void mf_store__directives_row(struct mf_store_directives *out, const struct mf_store_cursor *c,
                              int col);
/* The directives of a model the check-in cache knows unpinned: empty but for the device's
 * channel, as the read would have found them. */
void mf_store__directives_unpinned(struct mf_store_directives *out, const char *channel);
/* directives_get inside a transaction (SQLite's check-in batch reads them so). */
int mf_store__directives_read(struct mf_store_directives *out, struct mf_store *s,
                              struct mf_store_tx *tx, struct mf_ctx *ctx, const char *device_id,
                              const char *model);

/* The backend-neutral domain tables (store_<domain>.c). */
extern const struct mf_store_auth_ops mf_store__auth_ops;
extern const struct mf_store_registry_ops mf_store__registry_ops;
extern const struct mf_store_devices_ops mf_store__devices_ops;
extern const struct mf_store_director_ops mf_store__director_ops;
extern const struct mf_store_jobs_ops mf_store__jobs_ops;
extern const struct mf_store_offload_ops mf_store__offload_ops;
extern const struct mf_store_rollout_ops mf_store__rollout_ops;
extern const struct mf_store_distill_ops mf_store__distill_ops;
extern const struct mf_store_blobs_ops mf_store__blobs_ops;
extern const struct mf_store_audit_ops mf_store__audit_ops;
extern const struct mf_store_webhooks_ops mf_store__webhooks_ops;
extern const struct mf_store_variants_ops mf_store__variants_ops;
/* The members of a backend's struct mf_store_ops that name these tables: every domain but
 * check-in, which each backend writes its own way (one batched transaction each). */
#define MF_STORE_NEUTRAL_DOMAINS                                                                   \
    .auth = &mf_store__auth_ops, .registry = &mf_store__registry_ops,                              \
    .devices = &mf_store__devices_ops, .director = &mf_store__director_ops,                        \
    .jobs = &mf_store__jobs_ops, .offload = &mf_store__offload_ops,                                \
    .rollout = &mf_store__rollout_ops, .distill = &mf_store__distill_ops,                          \
    .blobs = &mf_store__blobs_ops, .audit = &mf_store__audit_ops,                                  \
    .webhooks = &mf_store__webhooks_ops, .variants = &mf_store__variants_ops

/* rollout_event_add in `tx` (NULL: on its own); the audit domain writes an event, its audit row
 * and its webhook deliveries in one transaction. */
int mf_store__event_insert(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                           const struct mf_store_rollout_event *e);

/* blob_ref inside a transaction (samples_delete decides orphans in its own). */
int mf_store__blob_ref_read(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s,
                            struct mf_store_tx *tx, struct mf_ctx *ctx, const char *sha256);

#endif /* MF_SERVER_STORE_ENGINE_H */
