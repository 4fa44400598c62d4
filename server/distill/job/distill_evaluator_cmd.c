/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The evaluator contract (docs/distill.md): for a model family the server does not know,
 * a configured command turns a model file and inputs into the model's outputs, and the
 * server computes the gate's figures from those outputs and the labels it keeps. The
 * command never sees a label, so it cannot pass its own gate. The run writes a fresh
 * directory and runs the command with it as its last argument:
 *
 *   job.json        {"n", "dim", "classes", "heldout", "calibration", "model": "model.bin",
 *                    "inputs": "inputs.npy", "outputs": "out/outputs.npy",
 *                    "kind": "probabilities" or "logits"}
 *   model.bin       the model file (the candidate the trainer wrote, or the deployed parent)
 *   inputs.npy      uint8 (n, dim): the held-out items, then the calibration items
 *
 * The command writes out/outputs.npy, float32 or float64 (n, classes), little-endian, C
 * order: a probability row per input (non-negative, summing to 1) or, with "logits", raw
 * scores the server turns into probabilities by softmax. Anything else is garbage: the
 * run fails and the fleet stays where it is.
 */
#include "distill/job/distill_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTPUTS_MAX (256u << 20)
#define NPY_HEADER_MAX 4096
#define PROB_SUM_TOLERANCE 1e-3
#define LOGIT_MAX 1e6

static const char *const names[] = {"job.json", "model.bin", "inputs.npy", "out/outputs.npy", NULL};

static int bad(struct mf_ctx *ctx, const char *what)
{
    return mf_fail(ctx, MF_E_INVALID, "evaluator output out/outputs.npy: %s", what);
}

void mf_distill__outputs_free(struct mf_distill_outputs *o, struct mf_ctx *ctx)
{
    mf_free(&ctx->alloc, o->pred);
    mf_free(&ctx->alloc, o->score);
    mf_free(&ctx->alloc, o->calib);
    memset(o, 0, sizeof(*o));
}

int mf_distill__outputs_alloc(struct mf_distill_outputs *o, struct mf_ctx *ctx, size_t n_heldout,
                              size_t n_calib)
{
    memset(o, 0, sizeof(*o));
    o->n_heldout = n_heldout;
    o->n_calib = n_calib;
    o->pred = mf_alloc(&ctx->alloc, n_heldout ? n_heldout : 1);
    o->score = mf_calloc(&ctx->alloc, n_heldout ? n_heldout : 1, sizeof(float));
    o->calib = mf_calloc(&ctx->alloc, n_calib ? n_calib : 1, sizeof(float));
    if (o->pred && o->score && o->calib)
        return MF_OK;
    mf_distill__outputs_free(o, ctx);
    return mf_fail(ctx, MF_E_NOMEM, "out of memory for %zu model outputs", n_heldout + n_calib);
}

/* ---- .npy: the header dict numpy writes, {'descr': ..., 'fortran_order': ..., 'shape': ...} */

struct npy {
    char descr[8];
    int fortran, have_descr, have_order, have_shape;
    size_t dims, shape[2];
};

static size_t skip_ws(const char *p, size_t i, size_t len)
{
    while (i < len && (p[i] == ' ' || p[i] == '\n'))
        i++;
    return i;
}

/* A quoted string at p[i] into dst; the index after it, or 0. */
static size_t quoted(char *dst, size_t size, const char *p, size_t i, size_t len)
{
    size_t n = 0;

    if (i >= len || p[i] != '\'')
        return 0;
    for (i++; i < len && p[i] != '\''; i++) {
        if (n + 1 >= size)
            return 0;
        dst[n++] = p[i];
    }
    dst[n] = '\0';
    return i < len ? i + 1 : 0;
}

/* "(a, b)" or "(a,)" at p[i]; the index after it, or 0. */
static size_t shape(struct npy *h, const char *p, size_t i, size_t len)
{
    if (i >= len || p[i] != '(')
        return 0;
    i = skip_ws(p, i + 1, len);
    while (i < len && p[i] != ')') {
        size_t v = 0, digits = 0;

        while (i < len && p[i] >= '0' && p[i] <= '9' && digits < 10) {
            v = v * 10 + (size_t)(p[i++] - '0');
            digits++;
        }
        if (!digits || h->dims == 2)
            return 0;
        h->shape[h->dims++] = v;
        i = skip_ws(p, i, len);
        if (i < len && p[i] == ',')
            i = skip_ws(p, i + 1, len);
        else if (i < len && p[i] != ')')
            return 0;
    }
    return i < len ? i + 1 : 0;
}

static int npy_header(struct npy *h, const char *p, size_t len)
{
    char key[32];
    size_t i = skip_ws(p, 0, len);

    memset(h, 0, sizeof(*h));
    if (i >= len || p[i++] != '{')
        return -1;
    for (;;) {
        i = skip_ws(p, i, len);
        if (i < len && p[i] == '}')
            break;
        i = quoted(key, sizeof(key), p, i, len);
        if (!i)
            return -1;
        i = skip_ws(p, i, len);
        if (i >= len || p[i] != ':')
            return -1;
        i = skip_ws(p, i + 1, len);
        if (strcmp(key, "descr") == 0 && !h->have_descr) {
            i = quoted(h->descr, sizeof(h->descr), p, i, len);
            h->have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !h->have_order) {
            h->fortran = len - i >= 4 && memcmp(p + i, "True", 4) == 0;
            if (!h->fortran && !(len - i >= 5 && memcmp(p + i, "False", 5) == 0))
                return -1;
            i += h->fortran ? 4 : 5;
            h->have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !h->have_shape) {
            i = shape(h, p, i, len);
            h->have_shape = 1;
        } else {
            return -1; /* an unknown or repeated key */
        }
        if (!i)
            return -1;
        i = skip_ws(p, i, len);
        if (i < len && p[i] == ',')
            i++;
        else if (i >= len || p[i] != '}')
            return -1;
    }
    return h->have_descr && h->have_order && h->have_shape ? 0 : -1;
}

static double le_value(const uint8_t *p, int f8)
{
    uint64_t u = 0;

    for (int b = (f8 ? 8 : 4) - 1; b >= 0; b--)
        u = u << 8 | p[b];
    if (f8) {
        double d;

        memcpy(&d, &u, sizeof(d));
        return d;
    }
    {
        const uint32_t u32 = (uint32_t)u;
        float f;

        memcpy(&f, &u32, sizeof(f));
        return f;
    }
}

/* One row of outputs into its prediction and max-probability score. */
static int row(uint8_t *pred, float *score, struct mf_ctx *ctx, const double *z, size_t classes,
               int logits, size_t item)
{
    double p[MF_DISTILL_MAX_CLASSES], top = z[0], sum = 0;
    size_t best = 0;
    char what[160];

    for (size_t k = 0; k < classes; k++) {
        if (!isfinite(z[k]) || (logits && fabs(z[k]) > LOGIT_MAX) ||
            (!logits && (z[k] < 0 || z[k] > 1 + PROB_SUM_TOLERANCE))) {
            (void)snprintf(what, sizeof(what), "row %zu holds %g, not a %s", item, z[k],
                           logits ? "finite logit" : "probability");
            return bad(ctx, what);
        }
        top = z[k] > top ? z[k] : top;
    }
    for (size_t k = 0; k < classes; k++) {
        p[k] = logits ? exp(z[k] - top) : z[k];
        sum += p[k];
        best = p[k] > p[best] ? k : best;
    }
    if (!logits && fabs(sum - 1.0) > PROB_SUM_TOLERANCE) {
        (void)snprintf(what, sizeof(what), "row %zu sums to %.6f, not 1", item, sum);
        return bad(ctx, what);
    }
    *pred = (uint8_t)best;
    *score = (float)(p[best] / sum);
    return MF_OK;
}

int mf_distill__outputs_parse(struct mf_distill_outputs *o, struct mf_ctx *ctx, const uint8_t *buf,
                              size_t len, size_t classes, int logits)
{
    const size_t n = o->n_heldout + o->n_calib;
    size_t hlen, off, esize;
    double z[MF_DISTILL_MAX_CLASSES];
    struct npy h;
    char what[200];
    int f8, err = MF_OK;

    if (classes < 2 || classes > MF_DISTILL_MAX_CLASSES)
        return mf_fail(ctx, MF_E_INVALID, "%zu classes: the gate handles 2..%d", classes,
                       MF_DISTILL_MAX_CLASSES);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0 || (buf[6] != 1 && buf[6] != 2))
        return bad(ctx, "not a .npy file (version 1 or 2)");
    hlen = buf[6] == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                       : (len < 12 ? SIZE_MAX
                                   : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                                         (size_t)buf[11] << 24);
    off = buf[6] == 1 ? 10 : 12;
    if (hlen > NPY_HEADER_MAX || hlen > len - off)
        return bad(ctx, "truncated header");
    if (npy_header(&h, (const char *)buf + off, hlen) < 0)
        return bad(ctx, "header is not {'descr', 'fortran_order', 'shape'}");
    f8 = strcmp(h.descr, "<f8") == 0;
    if (!f8 && strcmp(h.descr, "<f4") != 0) {
        (void)snprintf(what, sizeof(what), "dtype '%s': expected '<f4' or '<f8'", h.descr);
        return bad(ctx, what);
    }
    if (h.fortran || h.dims != 2 || h.shape[0] != n || h.shape[1] != classes) {
        (void)snprintf(what, sizeof(what), "shape (%zu, %zu)%s: expected (%zu, %zu) in C order",
                       h.shape[0], h.dims == 2 ? h.shape[1] : 0, h.fortran ? " Fortran" : "", n,
                       classes);
        return bad(ctx, what);
    }
    off += hlen;
    esize = f8 ? 8 : 4;
    if (len - off != n * classes * esize) {
        (void)snprintf(what, sizeof(what), "%zu data bytes for shape (%zu, %zu): expected %zu",
                       len - off, n, classes, n * classes * esize);
        return bad(ctx, what);
    }
    for (size_t i = 0; err == MF_OK && i < n; i++) {
        const uint8_t *r = buf + off + i * classes * esize;
        uint8_t pred = 0;
        float score = 0;

        for (size_t k = 0; k < classes; k++)
            z[k] = le_value(r + k * esize, f8);
        err = row(&pred, &score, ctx, z, classes, logits, i);
        if (i < o->n_heldout) {
            o->pred[i] = pred;
            o->score[i] = score;
        } else {
            o->calib[i - o->n_heldout] = score;
        }
    }
    return err;
}

/* inputs.npy: uint8 (n, dim), the held-out items then the calibration items. */
static int write_inputs(struct mf_ctx *ctx, const char *dir, const struct mf_distill_data *d)
{
    const mf_dataset *h = d->heldout, *tr = d->train;
    const size_t n = h->n + d->n_calib, dim = h->dim;
    char head[128];
    int hl = snprintf(head, sizeof(head),
                      "{'descr': '|u1', 'fortran_order': False, 'shape': "
                      "(%zu, %zu), }",
                      n, dim);
    size_t pad = 64 - ((size_t)10 + (size_t)hl + 1) % 64, total;
    uint8_t *buf, *x;
    int err;

    pad = pad == 64 ? 0 : pad;
    total = 10 + (size_t)hl + pad + 1 + n * dim;
    buf = mf_alloc(&ctx->alloc, total);
    if (!buf)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for %zu evaluator inputs", n);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(((size_t)hl + pad + 1) & 0xff);
    buf[9] = (uint8_t)(((size_t)hl + pad + 1) >> 8);
    memcpy(buf + 10, head, (size_t)hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + (size_t)hl + pad] = '\n';
    x = buf + 10 + (size_t)hl + pad + 1;
    memcpy(x, h->x, h->n * dim);
    for (size_t i = 0; i < d->n_calib; i++)
        memcpy(x + (h->n + i) * dim, tr->x + d->perm[d->n_seed + i] * tr->dim, dim);
    err = mf_distill__dir_put(ctx, dir, "inputs.npy", buf, total);
    mf_free(&ctx->alloc, buf);
    return err;
}

static int write_job(struct mf_ctx *ctx, const char *dir, const struct mf_distill_data *d,
                     size_t classes, int logits)
{
    cJSON *o = cJSON_CreateObject();
    int ok = 0;

    if (o && cJSON_AddNumberToObject(o, "n", (double)(d->heldout->n + d->n_calib)) &&
        cJSON_AddNumberToObject(o, "dim", d->heldout->dim) &&
        cJSON_AddNumberToObject(o, "classes", (double)classes) &&
        cJSON_AddNumberToObject(o, "heldout", (double)d->heldout->n) &&
        cJSON_AddNumberToObject(o, "calibration", (double)d->n_calib) &&
        cJSON_AddStringToObject(o, "model", "model.bin") &&
        cJSON_AddStringToObject(o, "inputs", "inputs.npy") &&
        cJSON_AddStringToObject(o, "outputs", "out/outputs.npy") &&
        cJSON_AddStringToObject(o, "kind", logits ? "logits" : "probabilities"))
        ok = 1;
    return mf_distill__dir_put_json(ctx, dir, "job.json", o, ok);
}

int mf_distill__outputs_command(struct mf_distill_outputs *o, struct mf_ctx *ctx,
                                const struct mf_distill_eval_cmd *e,
                                const struct mf_distill_data *d, const uint8_t *model, size_t len,
                                const char *dir, cJSON *note)
{
    char path[4400];
    uint8_t *buf = NULL;
    size_t blen = 0;
    int err;

    mf_distill__dir_remove(dir, names); /* a lost attempt's leftovers */
    err = mf_distill__outputs_alloc(o, ctx, d->heldout->n, d->n_calib);
    if (err == MF_OK)
        err = mf_distill__dir_make(ctx, dir);
    if (err == MF_OK)
        err = mf_distill__dir_put(ctx, dir, "model.bin", model, len);
    if (err == MF_OK)
        err = write_inputs(ctx, dir, d);
    if (err == MF_OK)
        err = write_job(ctx, dir, d, e->classes, e->logits);
    if (err == MF_OK)
        err = mf_distill__command_run(ctx, &e->cmd, dir, note);
    (void)snprintf(path, sizeof(path), "%s/out/outputs.npy", dir);
    if (err == MF_OK && mf_file_read_all(&buf, &blen, ctx, &ctx->alloc, path, OUTPUTS_MAX) < 0)
        err =
            mf_fail(ctx, MF_E_INVALID, "evaluator %s wrote no out/outputs.npy of at most %u bytes",
                    e->cmd.argv[0], OUTPUTS_MAX);
    if (err == MF_OK) {
        mf_distill__note_sha256(note, "outputs_sha256", buf, blen);
        err = mf_distill__outputs_parse(o, ctx, buf, blen, e->classes, e->logits);
    }
    mf_free(&ctx->alloc, buf);
    mf_distill__dir_remove(dir, names);
    if (err < 0)
        mf_distill__outputs_free(o, ctx);
    return err;
}
