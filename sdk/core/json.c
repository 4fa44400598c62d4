/* SPDX-License-Identifier: Apache-2.0 */
/* The strict JSON reader (see mf_json.h). */
#include "mf_json.h"
#include "mf_hex.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Where the check stopped and why; `rule` is a static string. */
struct json_fault {
    size_t off;
    int code;
    const char *rule;
    int byte; /* the offending byte for rules that cite it, else NO_BYTE */
};

#define NO_BYTE (-1)

/* Objects up to this many members are checked pairwise; larger ones are sorted. */
#define SMALL_OBJECT 16

static int fault(struct json_fault *f, size_t off, int code, const char *rule, int byte)
{
    f->off = off;
    f->code = code;
    f->rule = rule;
    f->byte = byte;
    return code;
}

static int is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Four hex digits at p[0..3] (bounds checked by the caller); -1 if any is not hex. */
static long hex4(const uint8_t *p)
{
    uint8_t v[2];

    if (mf_hex__decode(v, 2, (const char *)p, 4) < 0)
        return -1;
    return (long)v[0] << 8 | v[1];
}

/*
 * Length of the well-formed UTF-8 sequence starting at b[0] (a byte >= 0x80), 0 if it is
 * not one. Unicode 15 table 3-7: this refuses overlongs, encoded surrogates (ED A0..BF) and
 * anything above U+10FFFF.
 */
static size_t utf8_len(const uint8_t *b, size_t avail)
{
    uint8_t c = b[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (avail < n || b[1] < lo || b[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++) {
        if (b[k] < 0x80 || b[k] > 0xBF)
            return 0;
    }
    return n;
}

/* A string whose opening quote is at *pos; on success *pos is just past the closing quote. */
static int scan_string(struct json_fault *f, const uint8_t *b, size_t len, size_t *pos)
{
    size_t i = *pos + 1;

    while (i < len) {
        uint8_t c = b[i];

        if (c == '"') {
            *pos = i + 1;
            return MF_OK;
        }
        if (c < 0x20)
            return fault(f, i, MF_E_INVALID, "raw control character in a string", c);
        if (c >= 0x80) {
            size_t n = utf8_len(b + i, len - i);

            if (!n)
                return fault(f, i, MF_E_INVALID, "invalid UTF-8", c);
            i += n;
            continue;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= len)
            break;
        c = b[i + 1];
        if (c != 'u') {
            if (!strchr("\"\\/bfnrt", c) || c == '\0')
                return fault(f, i, MF_E_INVALID, "invalid escape", c);
            i += 2;
            continue;
        }
        long u = i + 6 <= len ? hex4(b + i + 2) : -1;

        if (u < 0)
            return fault(f, i, MF_E_INVALID, "invalid \\u escape", NO_BYTE);
        if (u == 0)
            return fault(f, i, MF_E_INVALID, "\\u0000 (NUL) in a string", NO_BYTE);
        if (u >= 0xDC00 && u <= 0xDFFF)
            return fault(f, i, MF_E_INVALID, "lone low surrogate escape", NO_BYTE);
        if (u >= 0xD800 && u <= 0xDBFF) {
            long lo = i + 12 <= len && b[i + 6] == '\\' && b[i + 7] == 'u' ? hex4(b + i + 8) : -1;

            if (lo < 0xDC00 || lo > 0xDFFF)
                return fault(f, i, MF_E_INVALID, "high surrogate escape without its low half",
                             NO_BYTE);
            i += 6;
        }
        i += 6;
    }
    return fault(f, len, MF_E_INVALID, "unterminated string", NO_BYTE);
}

/* 1 when the integer digits d[0..n) (no sign, no leading zero) exceed 2^53. */
static int above_2_53(const uint8_t *d, size_t n)
{
    static const char max[] = "9007199254740992";

    if (n != sizeof(max) - 1)
        return n > sizeof(max) - 1;
    return memcmp(d, max, n) > 0;
}

/* A number starting at *pos (a '-' or a digit), RFC 8259 section 6 exactly. */
static int scan_number(struct json_fault *f, const uint8_t *b, size_t len, size_t *pos)
{
    size_t start = *pos, i = *pos, int_start;
    int integral = 1;

    if (b[i] == '-')
        i++;
    int_start = i;
    if (i < len && b[i] == '0') {
        i++;
    } else if (i < len && b[i] >= '1' && b[i] <= '9') {
        while (i < len && b[i] >= '0' && b[i] <= '9')
            i++;
    } else {
        return fault(f, i, MF_E_INVALID, "number without integer digits", NO_BYTE);
    }
    size_t int_end = i;

    if (i < len && b[i] == '.') {
        integral = 0;
        if (++i >= len || b[i] < '0' || b[i] > '9')
            return fault(f, i, MF_E_INVALID, "number without digits after '.'", NO_BYTE);
        while (i < len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    if (i < len && (b[i] == 'e' || b[i] == 'E')) {
        integral = 0;
        i++;
        if (i < len && (b[i] == '+' || b[i] == '-'))
            i++;
        if (i >= len || b[i] < '0' || b[i] > '9')
            return fault(f, i, MF_E_INVALID, "number without exponent digits", NO_BYTE);
        while (i < len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    if (i - start > MF_JSON_NUMBER_MAX)
        return fault(f, start, MF_E_LIMIT, "number longer than 63 bytes", NO_BYTE);
    if (integral) {
        if (above_2_53(b + int_start, int_end - int_start))
            return fault(f, start, MF_E_INVALID, "integer magnitude above 2^53", NO_BYTE);
    } else {
        /* The token is short: read it the way cJSON will (strtod). Below 2^53 is exact as a
         * bound (rounding is monotonic, 2^53 is a double), so "9007199254740993.0" cannot
         * become 2^53, and what cJSON prints back stays inside the profile. */
        char tok[MF_JSON_NUMBER_MAX + 1];

        memcpy(tok, b + start, i - start);
        tok[i - start] = '\0';
        if (!(fabs(strtod(tok, NULL)) < 9007199254740992.0))
            return fault(f, start, MF_E_INVALID,
                         "fraction or exponent number of magnitude 2^53 or more", NO_BYTE);
    }
    *pos = i;
    return MF_OK;
}

static int scan_literal(struct json_fault *f, const uint8_t *b, size_t len, size_t *pos)
{
    static const char *const words[] = {"true", "false", "null"};

    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        size_t n = strlen(words[k]);

        if (len - *pos >= n && memcmp(b + *pos, words[k], n) == 0) {
            *pos += n;
            return MF_OK;
        }
    }
    return fault(f, *pos, MF_E_INVALID, "unexpected byte", b[*pos]);
}

enum json_state {
    ST_VALUE,         /* a value must follow */
    ST_VALUE_OR_END,  /* just after '[' */
    ST_MEMBER,        /* a member name must follow (after ',' in an object) */
    ST_MEMBER_OR_END, /* just after '{' */
    ST_COLON,         /* after a member name */
    ST_NEXT,          /* after a value: ',' or the closing bracket, or the end at level 0 */
};

/*
 * The syntax check: one pass, a state and one bit per open container (1: object), no
 * recursion and no allocation whatever the input.
 */
static int check(struct json_fault *f, const uint8_t *b, size_t len, unsigned int max_depth)
{
    enum json_state st = ST_VALUE;
    uint32_t objects = 0;
    unsigned int depth = 0;
    size_t i = 0;
    int err;

    for (;;) {
        while (i < len && is_ws(b[i]))
            i++;
        if (i == len) {
            if (st == ST_NEXT && depth == 0)
                return MF_OK;
            return fault(f, i, MF_E_INVALID, i ? "unexpected end of input" : "empty input",
                         NO_BYTE);
        }
        uint8_t c = b[i];

        if (c < 0x20)
            return fault(f, i, MF_E_INVALID, "raw control character outside a string", c);
        if (st == ST_NEXT && depth == 0)
            return fault(f, i, MF_E_INVALID, "trailing bytes after the JSON value", c);
        switch (st) {
        case ST_MEMBER_OR_END:
        case ST_VALUE_OR_END:
            if (c == (st == ST_MEMBER_OR_END ? '}' : ']'))
                goto close;
            st = st == ST_MEMBER_OR_END ? ST_MEMBER : ST_VALUE;
            continue;
        case ST_MEMBER:
            if (c != '"')
                return fault(f, i, MF_E_INVALID, "expected a member name", c);
            err = scan_string(f, b, len, &i);
            if (err < 0)
                return err;
            st = ST_COLON;
            continue;
        case ST_COLON:
            if (c != ':')
                return fault(f, i, MF_E_INVALID, "expected ':'", c);
            i++;
            st = ST_VALUE;
            continue;
        case ST_NEXT:
            if (c == ',') {
                i++;
                st = (objects & 1u) ? ST_MEMBER : ST_VALUE;
                continue;
            }
            if (c == ((objects & 1u) ? '}' : ']'))
                goto close;
            return fault(f, i, MF_E_INVALID, "expected ',' or the closing bracket", c);
        case ST_VALUE:
            break;
        }
        if (c == '{' || c == '[') {
            if (depth >= max_depth)
                return fault(f, i, MF_E_LIMIT, NULL, NO_BYTE); /* message names the bound */
            objects = (objects << 1) | (c == '{' ? 1u : 0u);
            depth++;
            i++;
            st = c == '{' ? ST_MEMBER_OR_END : ST_VALUE_OR_END;
            continue;
        }
        if (c == '"')
            err = scan_string(f, b, len, &i);
        else if (c == '-' || (c >= '0' && c <= '9'))
            err = scan_number(f, b, len, &i);
        else
            err = scan_literal(f, b, len, &i);
        if (err < 0)
            return err;
        st = ST_NEXT;
        continue;
    close:
        objects >>= 1;
        depth--;
        i++;
        st = ST_NEXT;
    }
}

/* Bottom-up merge sort of a member list by name, through `next` only (Tatham's list sort):
 * O(n log n), no allocation, and `prev` keeps the document order for restore_order(). */
static cJSON *sort_by_name(cJSON *list)
{
    for (size_t run = 1;; run *= 2) {
        cJSON *p = list, *tail = NULL;
        size_t merges = 0;

        list = NULL;
        while (p) {
            cJSON *q = p;
            size_t psize = 0, qsize = run;

            merges++;
            while (psize < run && q) {
                psize++;
                q = q->next;
            }
            while (psize > 0 || (qsize > 0 && q)) {
                cJSON *e;

                if (psize == 0) {
                    e = q;
                    q = q->next;
                    qsize--;
                } else if (qsize == 0 || !q || strcmp(p->string, q->string) <= 0) {
                    e = p;
                    p = p->next;
                    psize--;
                } else {
                    e = q;
                    q = q->next;
                    qsize--;
                }
                if (tail)
                    tail->next = e;
                else
                    list = e;
                tail = e;
            }
            p = q;
        }
        tail->next = NULL;
        if (merges <= 1)
            return list;
    }
}

/* cJSON links members both ways and keeps the last in head->prev: rebuild `next` from it. */
static void restore_order(cJSON *head)
{
    cJSON *p = head->prev;

    p->next = NULL;
    for (; p != head; p = p->prev)
        p->prev->next = p;
}

/* The first member name that occurs twice in `obj`, or NULL. */
static const char *duplicate_in(cJSON *obj)
{
    cJSON *head = obj->child, *a;
    const char *dup = NULL;
    size_t n = 0;

    for (a = head; a; a = a->next)
        n++;
    if (n <= SMALL_OBJECT) {
        for (a = head; a && !dup; a = a->next) {
            for (cJSON *b = a->next; b; b = b->next) {
                if (strcmp(a->string, b->string) == 0) {
                    dup = a->string;
                    break;
                }
            }
        }
        return dup;
    }
    for (a = sort_by_name(head); a->next; a = a->next) {
        if (strcmp(a->string, a->next->string) == 0) {
            dup = a->string;
            break;
        }
    }
    restore_order(head);
    return dup;
}

/* Every object of the tree, depth first, with one pointer per level (the depth is bounded
 * by check()). */
static const char *find_duplicate(cJSON *root)
{
    cJSON *stack[MF_JSON_DEPTH_MAX];
    unsigned int top = 0;
    cJSON *node = root;

    for (;;) {
        if (cJSON_IsObject(node) && node->child) {
            const char *dup = duplicate_in(node);

            if (dup)
                return dup;
        }
        if ((cJSON_IsObject(node) || cJSON_IsArray(node)) && node->child) {
            assert(top < MF_JSON_DEPTH_MAX);
            stack[top++] = node;
            node = node->child;
            continue;
        }
        while (!node->next) {
            if (top == 0)
                return NULL;
            node = stack[--top];
            if (top == 0)
                return NULL; /* back at the root */
        }
        node = node->next;
    }
}

int mf_json__parse(cJSON **out, struct mf_ctx *ctx, const void *buf, size_t len, size_t max_bytes,
                   unsigned int max_depth, const char *what)
{
    struct json_fault f = {0, 0, NULL, NO_BYTE};
    const char *dup;
    cJSON *root;
    int err;

    assert(max_depth >= 1 && max_depth <= MF_JSON_DEPTH_MAX);
    *out = NULL;
    if (len > max_bytes)
        return mf_fail(ctx, MF_E_LIMIT, "%s: JSON of %zu bytes exceeds %zu", what, len, max_bytes);
    err = check(&f, buf, len, max_depth);
    if (err < 0) {
        /* Lines help with configs written by hand, bytes with wire captures. */
        int line = 1;

        for (size_t k = 0; k < f.off; k++)
            line += ((const uint8_t *)buf)[k] == '\n';
        if (!f.rule)
            return mf_fail(ctx, err,
                           "%s: line %d: not valid JSON at byte %zu: nested deeper than %u levels",
                           what, line, f.off, max_depth);
        if (f.byte != NO_BYTE)
            return mf_fail(ctx, err, "%s: line %d: not valid JSON at byte %zu: %s (0x%02x)", what,
                           line, f.off, f.rule, (unsigned int)f.byte);
        return mf_fail(ctx, err, "%s: line %d: not valid JSON at byte %zu: %s", what, line, f.off,
                       f.rule);
    }
    /* The bytes are in the profile, so cJSON can only fail for memory. */
    root = cJSON_ParseWithLength(buf, len);
    if (!root)
        return mf_fail(ctx, MF_E_NOMEM, "%s: out of memory parsing %zu bytes of JSON", what, len);
    dup = find_duplicate(root);
    if (dup) {
        err = mf_fail(ctx, MF_E_INVALID, "%s: not valid JSON: duplicate member name '%.64s'", what,
                      dup);
        cJSON_Delete(root);
        return err;
    }
    *out = root;
    return MF_OK;
}

int mf_json__parse_object(cJSON **out, struct mf_ctx *ctx, const void *buf, size_t len,
                          size_t max_bytes, unsigned int max_depth, const char *what)
{
    int err = mf_json__parse(out, ctx, buf, len, max_bytes, max_depth, what);

    if (err < 0)
        return err;
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return mf_fail(ctx, MF_E_INVALID, "%s: top level is not a JSON object", what);
    }
    return MF_OK;
}
