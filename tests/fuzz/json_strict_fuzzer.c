/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target with a differential oracle for the strict JSON reader (sdk/core/json.c).
 *
 * The reference below is written from RFC 8259 and the profile of mf_json.h, not from the
 * reader: a recursive-descent checker that decodes every string (so member names are
 * compared after unescaping, by bytes and length), decodes UTF-8 to code points and checks
 * ranges, and reads integers into a uint64_t. Both must agree on accept/reject for every
 * input; an accepted document printed by cJSON must be accepted again and compare equal.
 * The first byte picks the depth bound (1..MF_JSON_DEPTH_MAX), the rest is the document.
 */
#include "mf_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ref {
    const uint8_t *s;
    size_t n, i;
    unsigned max_depth;
};

/* A decoded member name, kept for the duplicate comparison. */
struct key {
    uint8_t *b;
    size_t n;
};

static int ref_value(struct ref *r, unsigned depth);

static void ref_ws(struct ref *r)
{
    while (r->i < r->n &&
           (r->s[r->i] == 0x20 || r->s[r->i] == 0x09 || r->s[r->i] == 0x0A || r->s[r->i] == 0x0D))
        r->i++;
}

/* Takes byte `c` if it is the next one. */
static int ref_take(struct ref *r, char c)
{
    if (r->i < r->n && r->s[r->i] == c) {
        r->i++;
        return 1;
    }
    return 0;
}

static int ref_hex4(struct ref *r, unsigned *out)
{
    unsigned v = 0;

    if (r->n - r->i < 4)
        return 0;
    for (int k = 0; k < 4; k++) {
        uint8_t c = r->s[r->i++];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            v |= (unsigned)((c | 0x20) - 'a' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static void put_cp(struct key *k, unsigned cp)
{
    /* Only the bytes' identity matters for the comparison: store the code point. */
    k->b[k->n++] = (uint8_t)(cp >> 16);
    k->b[k->n++] = (uint8_t)(cp >> 8);
    k->b[k->n++] = (uint8_t)cp;
}

/* A string at r->i (the quote); decoded into *k when k is not NULL. */
static int ref_string(struct ref *r, struct key *k)
{
    if (k) {
        k->b = malloc(3 * (r->n - r->i) + 1);
        k->n = 0;
        if (!k->b)
            abort();
    }
    r->i++;
    for (;;) {
        unsigned cp;

        if (r->i >= r->n)
            return 0;
        uint8_t c = r->s[r->i++];

        if (c == '"')
            return 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (r->i >= r->n)
                return 0;
            c = r->s[r->i++];
            switch (c) {
            case '"':
            case '\\':
            case '/':
                cp = c;
                break;
            case 'b':
                cp = 8;
                break;
            case 'f':
                cp = 12;
                break;
            case 'n':
                cp = 10;
                break;
            case 'r':
                cp = 13;
                break;
            case 't':
                cp = 9;
                break;
            case 'u':
                if (!ref_hex4(r, &cp) || cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
                    return 0;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;

                    if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
                        return 0;
                    r->i += 2;
                    if (!ref_hex4(r, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return 0;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                break;
            default:
                return 0;
            }
        } else if (c < 0x80) {
            cp = c;
        } else {
            unsigned need, min;

            if ((c & 0xE0) == 0xC0) {
                need = 1, min = 0x80, cp = c & 0x1Fu;
            } else if ((c & 0xF0) == 0xE0) {
                need = 2, min = 0x800, cp = c & 0x0Fu;
            } else if ((c & 0xF8) == 0xF0) {
                need = 3, min = 0x10000, cp = c & 0x07u;
            } else {
                return 0;
            }
            for (unsigned j = 0; j < need; j++) {
                if (r->i >= r->n || (r->s[r->i] & 0xC0) != 0x80)
                    return 0;
                cp = cp << 6 | (r->s[r->i++] & 0x3Fu);
            }
            if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        }
        if (k)
            put_cp(k, cp);
    }
}

static int ref_number(struct ref *r)
{
    size_t start = r->i;
    int frac_or_exp = 0;
    uint64_t mag = 0;
    int big = 0;

    if (r->s[r->i] == '-')
        r->i++;
    if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
        return 0;
    if (r->s[r->i] == '0') {
        r->i++;
    } else {
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
            if (mag > (UINT64_C(1) << 53))
                big = 1;
            else
                mag = mag * 10 + (uint64_t)(r->s[r->i] - '0');
            r->i++;
        }
    }
    if (ref_take(r, '.')) {
        frac_or_exp = 1;
        if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
            return 0;
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
            r->i++;
    }
    if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
        frac_or_exp = 1;
        r->i++;
        if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-'))
            r->i++;
        if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
            return 0;
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9')
            r->i++;
    }
    if (r->i - start > 63)
        return 0;
    if (!frac_or_exp)
        return !big && mag <= (UINT64_C(1) << 53);
    char tok[64];

    memcpy(tok, r->s + start, r->i - start);
    tok[r->i - start] = 0;
    return fabs(strtod(tok, NULL)) < 9007199254740992.0;
}

static int ref_object(struct ref *r, unsigned depth)
{
    struct key *keys = NULL;
    size_t nk = 0;
    int ok = 0;

    r->i++;
    ref_ws(r);
    if (ref_take(r, '}'))
        return 1;
    for (;;) {
        ref_ws(r);
        if (r->i >= r->n || r->s[r->i] != '"')
            goto out;
        keys = realloc(keys, (nk + 1) * sizeof(*keys));
        if (!keys)
            abort();
        if (!ref_string(r, &keys[nk++]))
            goto out;
        for (size_t j = 0; j + 1 < nk; j++) {
            if (keys[j].n == keys[nk - 1].n && memcmp(keys[j].b, keys[nk - 1].b, keys[j].n) == 0)
                goto out;
        }
        ref_ws(r);
        if (!ref_take(r, ':') || !ref_value(r, depth))
            goto out;
        ref_ws(r);
        if (ref_take(r, ','))
            continue;
        ok = ref_take(r, '}');
        goto out;
    }
out:
    for (size_t j = 0; j < nk; j++)
        free(keys[j].b);
    free(keys);
    return ok;
}

static int ref_array(struct ref *r, unsigned depth)
{
    r->i++;
    ref_ws(r);
    if (ref_take(r, ']'))
        return 1;
    for (;;) {
        if (!ref_value(r, depth))
            return 0;
        ref_ws(r);
        if (!ref_take(r, ','))
            return ref_take(r, ']');
    }
}

static int ref_word(struct ref *r, const char *w)
{
    size_t n = strlen(w);

    if (r->n - r->i < n || memcmp(r->s + r->i, w, n) != 0)
        return 0;
    r->i += n;
    return 1;
}

/* `depth`: containers already open around this value. */
static int ref_value(struct ref *r, unsigned depth)
{
    ref_ws(r);
    if (r->i >= r->n)
        return 0;
    switch (r->s[r->i]) {
    case '{':
        return depth < r->max_depth && ref_object(r, depth + 1);
    case '[':
        return depth < r->max_depth && ref_array(r, depth + 1);
    case '"':
        return ref_string(r, NULL);
    case 't':
        return ref_word(r, "true");
    case 'f':
        return ref_word(r, "false");
    case 'n':
        return ref_word(r, "null");
    default:
        return (r->s[r->i] == '-' || (r->s[r->i] >= '0' && r->s[r->i] <= '9')) && ref_number(r);
    }
}

static int ref_accepts(const uint8_t *s, size_t n, unsigned max_depth)
{
    struct ref r = {s, n, 0, max_depth};

    if (!ref_value(&r, 0))
        return 0;
    ref_ws(&r);
    return r.i == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_ctx ctx;
    unsigned depth;
    cJSON *doc, *again;
    char *printed;
    int err, want;

    if (size < 1)
        return 0;
    depth = 1u + data[0] % MF_JSON_DEPTH_MAX;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    err = mf_json__parse(&doc, &ctx, data + 1, size - 1, size - 1, depth, "fuzz");
    want = ref_accepts(data + 1, size - 1, depth);
    if (err == MF_E_NOMEM)
        return 0;
    if ((err == MF_OK) != want)
        abort(); /* the reader and the reference disagree */
    if (err < 0) {
        if (!ctx.errmsg[0])
            abort(); /* every refusal says why */
        return 0;
    }
    printed = cJSON_PrintUnformatted(doc);
    if (!printed) {
        cJSON_Delete(doc);
        return 0;
    }
    err = mf_json__parse(&again, &ctx, printed, strlen(printed), SIZE_MAX, depth, "fuzz");
    if (err == MF_OK && !cJSON_Compare(doc, again, 1))
        abort(); /* printing changed the document */
    if (err < 0 && err != MF_E_NOMEM)
        abort(); /* what cJSON prints of an accepted document must be accepted */
    cJSON_Delete(again);
    cJSON_free(printed);
    cJSON_Delete(doc);
    return 0;
}
