/* SPDX-License-Identifier: Apache-2.0 */
/* Teacher registry, concurrency limit and circuit breaker (see teacher.h). */
#include "offload/teacher_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The connectors, by the name a model's configuration gives (STYLE rule 5). */
static const struct mf_teacher_connector *const connectors[] = {
    &mf_teacher__kserve,
    &mf_teacher__command,
    &mf_teacher__builtin,
};

struct mf_teacher {
    mf_allocator alloc;
    struct mf_teacher_config cfg;
    const struct mf_teacher_connector *conn;
    void *state;
    pthread_mutex_t lock;
    unsigned in_flight;
    unsigned failures; /* consecutive */
    int breaker;       /* enum mf_teacher_breaker */
    int trial_running; /* half-open: the one trial call is out */
    uint64_t open_until_ms;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void mf_teacher__config_init(struct mf_teacher_config *c, const char *model, const char *connector)
{
    memset(c, 0, sizeof(*c));
    (void)snprintf(c->model, sizeof(c->model), "%s", model);
    (void)snprintf(c->connector, sizeof(c->connector), "%s", connector);
    (void)snprintf(c->version, sizeof(c->version), "%s", "teacher");
    (void)snprintf(c->input_name, sizeof(c->input_name), "%s", "input");
    (void)snprintf(c->datatype, sizeof(c->datatype), "%s", "UINT8");
    c->timeout_ms = 2000;
    c->concurrency = 4;
    c->breaker_failures = 5;
    c->breaker_open_ms = 10000;
}

int mf_teacher__new(struct mf_teacher **out, struct mf_ctx *ctx, const struct mf_teacher_config *c)
{
    const struct mf_teacher_connector *conn = NULL;
    struct mf_teacher *t;
    int err;

    *out = NULL;
    for (size_t i = 0; i < sizeof(connectors) / sizeof(connectors[0]); i++) {
        if (strcmp(connectors[i]->name, c->connector) == 0)
            conn = connectors[i];
    }
    if (!conn)
        return mf_fail(ctx, MF_E_INVALID, "model %s: unknown teacher connector '%s'", c->model,
                       c->connector);
    if (!c->concurrency || !c->timeout_ms || !c->breaker_failures)
        return mf_fail(ctx, MF_E_INVALID,
                       "model %s: teacher timeout, concurrency and breaker_failures must be > 0",
                       c->model);
    t = mf_calloc(&ctx->alloc, 1, sizeof(*t));
    if (!t)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory opening the teacher of %s", c->model);
    t->alloc = ctx->alloc;
    t->cfg = *c;
    /* argv points into argv_store: re-point it into this copy. */
    for (size_t i = 0; i < MF_TEACHER_ARGV_MAX && c->argv[i]; i++)
        t->cfg.argv[i] = t->cfg.argv_store + (c->argv[i] - c->argv_store);
    t->conn = conn;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        mf_free(&ctx->alloc, t);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the teacher mutex");
    }
    err = conn->open(&t->state, ctx, &t->cfg);
    if (err < 0) {
        (void)pthread_mutex_destroy(&t->lock);
        mf_free(&ctx->alloc, t);
        return err;
    }
    *out = t;
    return MF_OK;
}

void mf_teacher__free(struct mf_teacher *t)
{
    mf_allocator alloc;

    if (!t)
        return;
    t->conn->close(t->state);
    (void)pthread_mutex_destroy(&t->lock);
    alloc = t->alloc;
    mf_free(&alloc, t);
}

/* Takes a call slot, or says why not (fail fast). Called under the lock. */
static int admit_locked(struct mf_teacher *t, struct mf_ctx *ctx, int *trial_out)
{
    uint64_t now = now_ms();

    *trial_out = 0;
    if (t->breaker == MF_TEACHER_OPEN && now >= t->open_until_ms)
        t->breaker = MF_TEACHER_HALF_OPEN;
    if (t->breaker == MF_TEACHER_OPEN)
        return mf_fail(ctx, MF_E_STATE, "teacher of %s is unavailable (circuit open)",
                       t->cfg.model);
    if (t->breaker == MF_TEACHER_HALF_OPEN) {
        if (t->trial_running)
            return mf_fail(ctx, MF_E_STATE, "teacher of %s is unavailable (trial call running)",
                           t->cfg.model);
        t->trial_running = 1;
        *trial_out = 1;
    }
    if (t->in_flight >= t->cfg.concurrency) {
        t->trial_running = 0;
        return mf_fail(ctx, MF_E_STATE, "teacher of %s is busy (%u calls in flight)", t->cfg.model,
                       t->in_flight);
    }
    t->in_flight++;
    return MF_OK;
}

static void settle(struct mf_teacher *t, int ok, int trial)
{
    (void)pthread_mutex_lock(&t->lock);
    t->in_flight--;
    if (trial)
        t->trial_running = 0;
    if (ok) {
        t->failures = 0;
        t->breaker = MF_TEACHER_CLOSED;
    } else if (trial || ++t->failures >= t->cfg.breaker_failures) {
        t->breaker = MF_TEACHER_OPEN;
        t->open_until_ms = now_ms() + t->cfg.breaker_open_ms;
    }
    (void)pthread_mutex_unlock(&t->lock);
}

void mf_teacher__softmax(float *v, size_t n)
{
    float max = v[0];
    double sum = 0.0;

    for (size_t i = 1; i < n; i++)
        max = v[i] > max ? v[i] : max;
    for (size_t i = 0; i < n; i++) {
        v[i] = expf(v[i] - max);
        sum += v[i];
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(v[i] / sum);
}

/* The protocol wants probabilities: n values in [0, 1] (a small rounding slack on the
 * sum, since teachers answer in float32). */
static int check_probs(struct mf_ctx *ctx, const float *p, size_t n, const char *model)
{
    double sum = 0.0;

    for (size_t i = 0; i < n; i++) {
        if (!(p[i] >= 0.0f && p[i] <= 1.0f))
            return mf_fail(ctx, MF_E_INVALID, "teacher of %s answered %g for class %zu", model,
                           (double)p[i], i);
        sum += p[i];
    }
    if (fabs(sum - 1.0) > 1e-3)
        return mf_fail(ctx, MF_E_INVALID, "teacher of %s answered probabilities summing to %g",
                       model, sum);
    return MF_OK;
}

int mf_teacher__ask(float *probs_out, char version_out[MF_STORE_NAME_SIZE], struct mf_teacher *t,
                    struct mf_ctx *ctx, const uint8_t *input, size_t len, size_t n_classes,
                    unsigned timeout_ms)
{
    unsigned limit = t->cfg.timeout_ms;
    int trial = 0, err;

    if (n_classes < 2 || n_classes > MF_TEACHER_MAX_CLASSES)
        return mf_fail(ctx, MF_E_INVALID, "%zu classes asked of the teacher of %s", n_classes,
                       t->cfg.model);
    if (timeout_ms && timeout_ms < limit)
        limit = timeout_ms;
    (void)pthread_mutex_lock(&t->lock);
    err = admit_locked(t, ctx, &trial);
    (void)pthread_mutex_unlock(&t->lock);
    if (err < 0)
        return err;
    (void)snprintf(version_out, MF_STORE_NAME_SIZE, "%s", t->cfg.version);
    err = t->conn->infer(probs_out, version_out, t->state, ctx, &t->cfg, input, len, n_classes,
                         limit);
    if (err == MF_OK && t->cfg.output_logits)
        mf_teacher__softmax(probs_out, n_classes);
    if (err == MF_OK)
        err = check_probs(ctx, probs_out, n_classes, t->cfg.model);
    settle(t, err == MF_OK, trial);
    return err;
}

int mf_teacher__breaker(struct mf_teacher *t)
{
    int b;

    (void)pthread_mutex_lock(&t->lock);
    if (t->breaker == MF_TEACHER_OPEN && now_ms() >= t->open_until_ms)
        t->breaker = MF_TEACHER_HALF_OPEN;
    b = t->breaker;
    (void)pthread_mutex_unlock(&t->lock);
    return b;
}

const struct mf_teacher_config *mf_teacher__config(const struct mf_teacher *t)
{
    return &t->cfg;
}
