/* SPDX-License-Identifier: Apache-2.0 */
/* The check-in answer's JSON text (see checkin_answer.h). */
#include "director/checkin_answer.h"

#include "mf/error.h"

#include <stdio.h>
#include <string.h>

/* Far above any answer (roots, keys and a release per model): only a runaway stops here. */
#define ANSWER_TEXT_MAX (64u * 1024 * 1024)

void mf_answer__init(struct mf_answer *a)
{
    mf_dynbuf__init(&a->text, NULL, ANSWER_TEXT_MAX);
    a->n_holes = 0;
}

void mf_answer__free(struct mf_answer *a)
{
    mf_dynbuf__free(&a->text);
    a->n_holes = 0;
}

/* "key": (nothing for an array element). Keys are literals of this file's callers. */
static int key_of(struct mf_answer *a, const char *key)
{
    int err;

    if (!key)
        return MF_OK;
    err = mf_dynbuf__append(&a->text, "\"", 1);
    if (err == MF_OK)
        err = mf_dynbuf__append(&a->text, key, strlen(key));
    return err == MF_OK ? mf_dynbuf__append(&a->text, "\":", 2) : err;
}

int mf_answer__open(struct mf_answer *a, const char *key, char bracket)
{
    int err = key_of(a, key);

    return err == MF_OK ? mf_dynbuf__append(&a->text, &bracket, 1) : err;
}

int mf_answer__close(struct mf_answer *a, char bracket)
{
    struct mf_dynbuf *t = &a->text;
    int err;

    /* The last member's comma becomes the bracket; an empty one just gets it. */
    if (t->len > 0 && t->data[t->len - 1] == ',') {
        t->data[t->len - 1] = (uint8_t)bracket;
        return mf_answer__end(a);
    }
    err = mf_dynbuf__append(t, &bracket, 1);
    return err == MF_OK ? mf_answer__end(a) : err;
}

int mf_answer__end(struct mf_answer *a)
{
    return mf_dynbuf__append(&a->text, ",", 1);
}

int mf_answer__str_n(struct mf_answer *a, const char *key, const char *s, size_t n)
{
    int err = key_of(a, key);

    if (err == MF_OK)
        err = mf_dynbuf__append_json_str(&a->text, s, n);
    return err == MF_OK ? mf_answer__end(a) : err;
}

int mf_answer__str(struct mf_answer *a, const char *key, const char *s)
{
    return mf_answer__str_n(a, key, s, strlen(s));
}

int mf_answer__count(struct mf_answer *a, const char *key, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
    int err = key_of(a, key);

    if (err == MF_OK)
        err = mf_dynbuf__append(&a->text, digits, (size_t)n);
    return err == MF_OK ? mf_answer__end(a) : err;
}

int mf_answer__raw_begin(struct mf_answer *a, const char *key)
{
    return key_of(a, key);
}

int mf_answer__release(int *held_out, struct mf_answer *a, const struct mf_answer_release *r)
{
    char blob[sizeof("/v1/blobs/") + 64];
    int err = mf_answer__open(a, NULL, '{');

    *held_out = r->held && strcmp(r->held, r->digest) == 0;
    if (err == MF_OK)
        err = mf_answer__str(a, "model", r->model);
    if (err == MF_OK)
        err = mf_answer__str(a, "version", r->version);
    if (err != MF_OK || *held_out)
        return err; /* the device verifies the assignment against the envelope it holds */
    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", r->sha256);
    err = mf_answer__str(a, "sha256", r->sha256);
    if (err == MF_OK)
        err = mf_answer__count(a, "size", r->size);
    if (err == MF_OK && r->variant && r->variant[0])
        err = mf_answer__str(a, "variant", r->variant);
    if (err == MF_OK)
        err = mf_answer__str(a, "blob", blob);
    if (err == MF_OK)
        err = mf_answer__raw_begin(a, "release");
    if (err == MF_OK)
        err = r->quoted_fn(&a->text, r->quoted_payload);
    return err == MF_OK ? mf_answer__end(a) : err;
}

int mf_answer__chunk_list(struct mf_answer *a, const char *sha256)
{
    char blob[sizeof("/v1/blobs/") + 64];
    int err = mf_answer__open(a, "chunk_list", '{');

    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", sha256);
    if (err == MF_OK)
        err = mf_answer__str(a, "blob", blob);
    if (err == MF_OK)
        err = mf_answer__str(a, "sha256", sha256);
    return err == MF_OK ? mf_answer__close(a, '}') : err;
}

int mf_answer__hole(struct mf_answer *a, const char *key)
{
    int err;

    if (a->n_holes == MF_ANSWER_HOLES_MAX)
        return MF_E_LIMIT;
    err = key_of(a, key);
    if (err == MF_OK)
        a->hole[a->n_holes++] = a->text.len;
    return err == MF_OK ? mf_answer__end(a) : err;
}

char *mf_answer__finish(size_t *len_out, struct mf_answer *a, uint8_t *const *envs,
                        const size_t *lens)
{
    struct mf_dynbuf out;
    size_t at = 0, total = a->text.len;
    int err;

    *len_out = 0;
    /* The outermost close left its member's comma: the text ends with the object. */
    if (a->text.len > 0 && a->text.data[a->text.len - 1] == ',')
        a->text.data[--a->text.len] = 0;
    total = a->text.len;
    if (a->n_holes == 0)
        return (char *)mf_dynbuf__take(&a->text, len_out);
    /* Room for every envelope quoted without escapes; appending grows it for the escapes. */
    for (size_t i = 0; i < a->n_holes; i++)
        total += lens[i] + 2;
    mf_dynbuf__init(&out, NULL, ANSWER_TEXT_MAX);
    err = mf_dynbuf__reserve(&out, total);
    for (size_t i = 0; err == MF_OK && i < a->n_holes; i++) {
        err = mf_dynbuf__append(&out, a->text.data + at, a->hole[i] - at);
        if (err == MF_OK)
            err = mf_dynbuf__append_json_str(&out, (const char *)envs[i], lens[i]);
        at = a->hole[i];
    }
    if (err == MF_OK)
        err = mf_dynbuf__append(&out, a->text.data + at, a->text.len - at);
    if (err != MF_OK) {
        mf_dynbuf__free(&out);
        return NULL;
    }
    return (char *)mf_dynbuf__take(&out, len_out);
}
