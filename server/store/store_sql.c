/* SPDX-License-Identifier: Apache-2.0 */
/* The statement helpers the backend-neutral ops are written with, and the placeholder
 * rewriting of the PostgreSQL backend (see store_engine.h). */
#include "store/store_engine.h"
#include "store/store_schema.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void params_va(struct mf_store_params *p, const char *types, va_list ap)
{
    p->n = 0;
    for (const char *t = types; *t; t++) {
        struct mf_store_param *v = &p->v[p->n++];

        assert(p->n <= MF_STORE_PARAMS_MAX);
        memset(v, 0, sizeof(*v));
        switch (*t) {
        case 't':
            v->type = MF_STORE_P_TEXT;
            v->ptr = va_arg(ap, const char *);
            break;
        case 'i':
            v->type = MF_STORE_P_I64;
            v->i64 = va_arg(ap, int64_t);
            break;
        case 'd':
            v->type = MF_STORE_P_F64;
            v->f64 = va_arg(ap, double);
            break;
        case 'h':
            v->type = MF_STORE_P_BLOB;
            v->ptr = va_arg(ap, const uint8_t *);
            v->len = MF_SHA256_LEN;
            break;
        default:
            assert(*t == 'b');
            v->type = MF_STORE_P_BLOB;
            v->ptr = va_arg(ap, const void *);
            v->len = va_arg(ap, size_t);
            break;
        }
    }
}

/* The statement helpers' parameters: the arguments that follow `types`. */
#define PARAMS_FROM_ARGS(p, types)                                                                 \
    do {                                                                                           \
        va_list ap;                                                                                \
                                                                                                   \
        va_start(ap, types);                                                                       \
        params_va(p, types, ap);                                                                   \
        va_end(ap);                                                                                \
    } while (0)

void mf_store__params(struct mf_store_params *p, const char *types, ...)
{
    PARAMS_FROM_ARGS(p, types);
}

int mf_store__run(int64_t *changes_out, struct mf_store *s, struct mf_store_tx *tx,
                  struct mf_ctx *ctx, const struct mf_sql *q, mf_store_row_fn fn, void *payload,
                  const char *types, ...)
{
    struct mf_store_params p;

    PARAMS_FROM_ARGS(&p, types);
    return s->engine->run(changes_out, s, tx, ctx, q, &p, fn, payload);
}

int mf_store__list(struct mf_store *s, struct mf_ctx *ctx, const struct mf_sql *q,
                   mf_store_row_fn visit, void (*fn)(void), void *payload, const char *types, ...)
{
    struct mf_store_visit v = {fn, payload, ctx};
    struct mf_store_params p;

    PARAMS_FROM_ARGS(&p, types);
    return s->engine->run(NULL, s, NULL, ctx, q, &p, visit, &v);
}

int mf_store__take_i64(void *payload, const struct mf_store_cursor *row)
{
    *(int64_t *)payload = mf_store__col_i64(row, 0);
    return MF_OK;
}

struct first_row {
    mf_store_row_fn fn;
    void *payload;
    int found;
};

static int take_first(void *payload, const struct mf_store_cursor *row)
{
    struct first_row *f = payload;

    if (f->found++ || !f->fn)
        return MF_OK; /* only the first row counts; no fn: only whether there is one */
    return f->fn(f->payload, row);
}

int mf_store__first(int *found_out, struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                    const struct mf_sql *q, mf_store_row_fn fn, void *payload, const char *types,
                    ...)
{
    struct first_row f = {fn, payload, 0};
    struct mf_store_params p;
    int err;

    PARAMS_FROM_ARGS(&p, types);
    err = s->engine->run(NULL, s, tx, ctx, q, &p, take_first, &f);
    *found_out = err == MF_OK && f.found > 0;
    return err;
}

static int change_params(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                         const struct mf_sql *q, const struct mf_store_params *p, int *none_out)
{
    int64_t changes = 0;
    int err = s->engine->run(&changes, s, tx, ctx, q, p, NULL, NULL);

    *none_out = err == MF_OK && changes == 0;
    return err;
}

int mf_store__change(struct mf_store *s, struct mf_store_tx *tx, struct mf_ctx *ctx,
                     int missing_err, const char *missing, const struct mf_sql *q,
                     const char *types, ...)
{
    struct mf_store_params p;
    int none;
    int err;

    PARAMS_FROM_ARGS(&p, types);
    err = change_params(s, tx, ctx, q, &p, &none);
    return none ? mf_fail(ctx, missing_err, "%s", missing) : err;
}

int mf_store__change_state(struct mf_store *s, struct mf_ctx *ctx, const char *noun, int64_t id,
                           const char *expect_state, const struct mf_sql *q, const char *types, ...)
{
    struct mf_store_params p;
    int none;
    int err;

    PARAMS_FROM_ARGS(&p, types);
    err = change_params(s, NULL, ctx, q, &p, &none);
    if (!none)
        return err;
    return mf_fail(ctx, expect_state[0] ? MF_E_STATE : MF_E_NOTFOUND,
                   "%s %lld is unknown or no longer %s", noun, (long long)id,
                   expect_state[0] ? expect_state : "there");
}

int mf_store__in_tx(struct mf_store *s, struct mf_ctx *ctx, mf_store_tx_fn fn, void *arg)
{
    return s->engine->in_tx(s, ctx, fn, arg);
}

void mf_store__cols(const struct mf_store_cursor *row, int col, const char *types, ...)
{
    va_list ap;

    va_start(ap, types);
    for (const char *t = types; *t; t++, col++) {
        if (*t == 't') {
            char *dst = va_arg(ap, char *);

            mf_store__col_text(dst, va_arg(ap, size_t), row, col);
        } else if (*t == 'i') {
            *va_arg(ap, int64_t *) = row->ops->i64(row, col);
        } else if (*t == 'u') {
            *va_arg(ap, uint64_t *) = (uint64_t)row->ops->i64(row, col);
        } else if (*t == 'n') {
            *va_arg(ap, int *) = (int)row->ops->i64(row, col);
        } else if (*t == 'd') {
            *va_arg(ap, double *) = row->ops->f64(row, col);
        } else {
            assert(*t == 's');
            *va_arg(ap, const char **) = row->ops->text(row, col);
        }
    }
    va_end(ap);
}

int mf_store__schema_known(struct mf_ctx *ctx, int cur)
{
    if (cur > MF_STORE_SCHEMA_LATEST)
        return mf_fail(ctx, MF_E_STATE, "store schema version %d is newer than this server's %d",
                       cur, MF_STORE_SCHEMA_LATEST);
    return MF_OK;
}

void mf_store__checkin_reset(struct mf_store_checkin *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        items[i].generation = items[i].first = 0;
        items[i].err = MF_OK;
    }
}

int mf_store__checkin_result(const struct mf_store_checkin *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].err < 0)
            return items[i].err;
    }
    return MF_OK;
}

void mf_store__col_text(char *dst, size_t size, const struct mf_store_cursor *c, int col)
{
    (void)snprintf(dst, size, "%s", c->ops->text(c, col));
}

int mf_store__col_envelope(struct mf_dynbuf *out, struct mf_ctx *ctx,
                           const struct mf_store_cursor *c, int col, const char *what)
{
    const void *p;
    size_t n = 0;

    if (c->ops->null(c, col))
        return mf_fail(ctx, MF_E_NOTFOUND, "no %s", what);
    p = c->ops->blob(c, &n, col);
    mf_dynbuf__init(out, &ctx->alloc, MF_STORE_ENVELOPE_MAX + 1);
    if (mf_dynbuf__append(out, p, n) < 0)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory reading an envelope of %zu bytes", n);
    return MF_OK;
}

/* Appends `text` (n bytes) at *len; 0 when it does not fit. */
static int put(char *out, size_t size, size_t *len, const char *text, size_t n)
{
    if (*len + n >= size)
        return 0;
    memcpy(out + *len, text, n);
    *len += n;
    return 1;
}

int mf_store__sql_to_pg(char *out, size_t size, const char *sql)
{
    unsigned next = 0; /* highest parameter number so far */
    size_t len = 0;
    char quote = 0; /* inside '...' or "...": nothing is a placeholder */
    int ok = 1;

    for (const char *p = sql; *p && ok; p++) {
        if (quote) {
            /* A doubled quote inside stays inside: it toggles out and straight back in. */
            if (*p == quote)
                quote = 0;
            ok = put(out, size, &len, p, 1);
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
            ok = put(out, size, &len, p, 1);
        } else if (*p == '?') {
            char num[16];
            unsigned k = 0;
            int n;

            while (p[1] >= '0' && p[1] <= '9' && k < 100000)
                k = k * 10 + (unsigned)(*++p - '0');
            if (k == 0)
                k = next + 1;
            if (k > next)
                next = k;
            n = snprintf(num, sizeof(num), "$%u", k);
            ok = put(out, size, &len, num, (size_t)n);
        } else {
            ok = put(out, size, &len, p, 1);
        }
    }
    if (!ok || len >= size)
        return MF_E_LIMIT;
    out[len] = '\0';
    return MF_OK;
}
