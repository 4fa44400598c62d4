/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auth domain of the store, both backends (struct mf_store_auth_ops, semantics in
 * store.h): enrollment and admin tokens, device credentials, admin tokens with a role. Every
 * secret is stored as its SHA-256 only; a row found by its hash is compared once more in
 * constant time, so no code path branches on a partial match.
 */
#include "store/store_engine.h"

#include "mf/ct.h"

#include <stdio.h>
#include <string.h>

/* The catalogue of this domain. */
static const struct mf_sql sql_token_count =
    MF_SQL("SELECT count(*) FROM tokens WHERE kind = ? AND revoked = 0", "counting tokens");
static const struct mf_sql sql_token_insert =
    MF_SQL("INSERT INTO tokens(hash, kind, created_at) VALUES(?, ?, ?)", "inserting a token");
static const struct mf_sql sql_token_check =
    MF_SQL("SELECT hash FROM tokens WHERE hash = ? AND kind = ? AND revoked = 0", "token lookup");
/* Re-enrolment replaces the credential hash, which revokes the old credential. */
static const struct mf_sql sql_device_enroll =
    MF_SQL("INSERT INTO devices(device_id, credential_hash, enrolled_at)"
           " VALUES(?, ?, ?) ON CONFLICT(device_id) DO UPDATE SET"
           " credential_hash = excluded.credential_hash,"
           " enrolled_at = excluded.enrolled_at, revoked = 0",
           "enrolling a device");
static const struct mf_sql sql_device_auth =
    MF_SQL("SELECT device_id, credential_hash FROM devices WHERE credential_hash = ?",
           "credential lookup");
/* Dropping the hash is what revokes: auth looks devices up by it. */
static const struct mf_sql sql_device_revoke =
    MF_SQL("UPDATE devices SET credential_hash = NULL, revoked = 1 WHERE device_id = ?",
           "revoking a device");
static const struct mf_sql sql_admin_insert =
    MF_SQL("INSERT INTO tokens(hash, kind, created_at, role, name) VALUES(?, 0, ?, ?, ?)",
           "inserting an admin token");
static const struct mf_sql sql_admin_auth =
    MF_SQL("SELECT hash, role, name FROM tokens WHERE hash = ? AND kind = 0 AND revoked = 0",
           "token lookup");
/* A token's id is the hex of its hash's first 8 bytes, in each dialect. */
#define TOKEN_ID_SQLITE "lower(hex(substr(hash, 1, 8)))"
#define TOKEN_ID_PG "encode(substring(hash FROM 1 FOR 8), 'hex')"
#define ADMIN_REVOKE(id)                                                                           \
    "UPDATE tokens SET revoked = 1 WHERE kind = 0 AND revoked = 0 AND " id " = lower(?)"
static const struct mf_sql sql_admin_revoke = MF_SQL_PAIR(
    ADMIN_REVOKE(TOKEN_ID_SQLITE), ADMIN_REVOKE(TOKEN_ID_PG), "revoking an admin token");
/* Creation order: SQLite's rowid, PostgreSQL's seq column (migration 3). */
#define ADMIN_LIST(id, order)                                                                      \
    "SELECT " id                                                                                   \
    ", name, role, created_at, revoked FROM tokens WHERE kind = 0 ORDER BY created_at, " order
static const struct mf_sql sql_admin_list = {
    .sqlite = ADMIN_LIST(TOKEN_ID_SQLITE, "rowid"),
    .pg = ADMIN_LIST(TOKEN_ID_PG, "seq"),
    .what = "listing admin tokens",
    .stream = 1,
};

/* Whether column `col` of the row holds exactly `hash`, compared in constant time. */
static int hash_matches(const struct mf_store_cursor *row, int col,
                        const uint8_t hash[MF_SHA256_LEN])
{
    size_t n = 0;
    const void *p = row->ops->blob(row, &n, col);

    return n == MF_SHA256_LEN && mf_ct_memeq(p, hash, MF_SHA256_LEN);
}

static int read_count(void *payload, const struct mf_store_cursor *row)
{
    *(int *)payload = (int)mf_store__col_i64(row, 0);
    return MF_OK;
}

static int auth_token_count(int *count_out, struct mf_store *s, struct mf_ctx *ctx, int kind)
{
    int found = 0;

    *count_out = 0;
    return mf_store__first(&found, s, NULL, ctx, &sql_token_count, read_count, count_out, "i",
                           (int64_t)kind);
}

static int auth_token_insert(struct mf_store *s, struct mf_ctx *ctx, int kind,
                             const uint8_t hash[MF_SHA256_LEN], int64_t now)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_token_insert, NULL, NULL, "hii", hash,
                         (int64_t)kind, now);
}

/* A hash lookup's row: whether its hash (column hash_col) matched, and the column it
 * carries besides: a text (text_col, device_auth's device id, admin_token_auth's name)
 * and a number (number_col, admin_token_auth's role); -1: none. */
struct hash_row {
    const uint8_t *hash;
    int hash_col, text_col, number_col;
    int matched;
    char text[MF_STORE_NAME_SIZE];
    int64_t number;
};

static int check_hash(void *payload, const struct mf_store_cursor *row)
{
    struct hash_row *h = payload;

    h->matched = hash_matches(row, h->hash_col, h->hash);
    if (h->matched && h->text_col >= 0)
        mf_store__col_text(h->text, sizeof(h->text), row, h->text_col);
    if (h->matched && h->number_col >= 0)
        h->number = mf_store__col_i64(row, h->number_col);
    return MF_OK;
}

static int auth_token_check(struct mf_store *s, struct mf_ctx *ctx, int kind,
                            const uint8_t hash[MF_SHA256_LEN])
{
    struct hash_row h = {.hash = hash, .hash_col = 0, .text_col = -1, .number_col = -1};
    int found = 0;
    int err = mf_store__first(&found, s, NULL, ctx, &sql_token_check, check_hash, &h, "hi", hash,
                              (int64_t)kind);

    if (err == MF_OK && !h.matched)
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
    return err;
}

static int auth_device_enroll(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                              const uint8_t cred_hash[MF_SHA256_LEN], int64_t now)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_device_enroll, NULL, NULL, "thi", device_id,
                         cred_hash, now);
}

static int auth_device_auth(char device_id_out[MF_STORE_NAME_SIZE], struct mf_store *s,
                            struct mf_ctx *ctx, const uint8_t cred_hash[MF_SHA256_LEN])
{
    struct hash_row h = {.hash = cred_hash, .hash_col = 1, .text_col = 0, .number_col = -1};
    int found = 0;
    int err;

    device_id_out[0] = '\0';
    err = mf_store__first(&found, s, NULL, ctx, &sql_device_auth, check_hash, &h, "h", cred_hash);
    if (err == MF_OK && h.matched)
        (void)snprintf(device_id_out, MF_STORE_NAME_SIZE, "%s", h.text);
    else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked device credential");
    return err;
}

static int auth_device_revoke(struct mf_store *s, struct mf_ctx *ctx, const char *device_id)
{
    char missing[MF_STORE_NAME_SIZE + 32];

    (void)snprintf(missing, sizeof(missing), "unknown device '%s'", device_id);
    return mf_store__change(s, NULL, ctx, MF_E_NOTFOUND, missing, &sql_device_revoke, "t",
                            device_id);
}

static int auth_admin_token_insert(struct mf_store *s, struct mf_ctx *ctx,
                                   const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                                   int64_t now)
{
    return mf_store__run(NULL, s, NULL, ctx, &sql_admin_insert, NULL, NULL, "hiit", hash, now,
                         (int64_t)role, name);
}

static int auth_admin_token_auth(int *role_out, char name_out[MF_STORE_NAME_SIZE],
                                 struct mf_store *s, struct mf_ctx *ctx,
                                 const uint8_t hash[MF_SHA256_LEN])
{
    struct hash_row h = {.hash = hash, .hash_col = 0, .text_col = 2, .number_col = 1};
    int found = 0;
    int err;

    *role_out = 0;
    name_out[0] = '\0';
    err = mf_store__first(&found, s, NULL, ctx, &sql_admin_auth, check_hash, &h, "h", hash);
    if (err == MF_OK && h.matched) {
        *role_out = (int)h.number;
        (void)snprintf(name_out, MF_STORE_NAME_SIZE, "%s", h.text);
    } else if (err == MF_OK)
        err = mf_fail(ctx, MF_E_AUTH, "unknown or revoked token");
    return err;
}

static int auth_admin_token_revoke(struct mf_store *s, struct mf_ctx *ctx, const char *id)
{
    char missing[MF_STORE_NAME_SIZE + 40];

    (void)snprintf(missing, sizeof(missing), "no active admin token with id '%.*s'",
                   MF_STORE_NAME_SIZE - 1, id);
    return mf_store__change(s, NULL, ctx, MF_E_NOTFOUND, missing, &sql_admin_revoke, "t", id);
}

static int visit_token(void *payload, const struct mf_store_cursor *row)
{
    const struct mf_store_visit *w = payload;
    struct mf_store_token t;

    mf_store__cols(row, 0, "ttnin", MF_STORE_TEXT(t.id), MF_STORE_TEXT(t.name), &t.role,
                   &t.created_at, &t.revoked);
    return ((mf_store_token_fn)w->fn)(w->payload, &t);
}

MF_STORE_LISTING(auth_admin_tokens_list, mf_store_token_fn, &sql_admin_list, visit_token)

/* Each op of the table is the function named after it with the domain's prefix. */
#define OP(name) .name = auth_##name
const struct mf_store_auth_ops mf_store__auth_ops = {
    OP(token_count),        OP(token_insert),      OP(token_check),        OP(device_enroll),
    OP(device_auth),        OP(device_revoke),     OP(admin_token_insert), OP(admin_token_auth),
    OP(admin_token_revoke), OP(admin_tokens_list),
};
#undef OP
