/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The telemetry handle and its record path (mf/telemetry.h). Recording finds or takes the
 * version's slot and bumps counters: no allocation, no I/O, a few dozen instructions.
 */
#include "mf_telemetry_int.h"

#include <stdio.h>
#include <string.h>

size_t mf_telemetry_workspace_size(void)
{
    return sizeof(struct mf_telemetry);
}

static int set_name(struct mf_telemetry *t, const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > MF_TELEMETRY_NAME_MAX)
        return MF_E_INVALID;
    memcpy(t->name, name, n + 1);
    (void)snprintf(t->tmp_name, sizeof(t->tmp_name), "%s.tmp", name);
    return MF_OK;
}

int mf_telemetry_init_static(mf_telemetry **out, void *ws, size_t ws_size,
                             const mf_platform_ops *platform, const char *name)
{
    struct mf_telemetry *t = ws;
    int err;

    *out = NULL;
    if (ws_size < sizeof(*t))
        return MF_E_LIMIT;
    memset(t, 0, sizeof(*t));
    err = set_name(t, name);
    if (err < 0)
        return err;
    if (platform) {
        t->platform = *platform;
        t->has_platform = 1;
    }
    *out = t;
    return MF_OK;
}

int mf_telemetry_new(mf_telemetry **out, const mf_allocator *allocator,
                     const mf_platform_ops *platform, const char *name)
{
    mf_allocator a = allocator ? *allocator : *mf_allocator_default();
    void *ws = mf_alloc(&a, sizeof(struct mf_telemetry));
    int err;

    *out = NULL;
    if (!ws)
        return MF_E_NOMEM;
    err = mf_telemetry_init_static(out, ws, sizeof(struct mf_telemetry), platform, name);
    if (err < 0) {
        mf_free(&a, ws);
        return err;
    }
    (*out)->heap = 1;
    (*out)->alloc = a;
    return MF_OK;
}

void mf_telemetry_free(mf_telemetry *t)
{
    mf_allocator a;

    if (!t || !t->heap)
        return;
    a = t->alloc;
    mf_free(&a, t);
}

static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= MF_OFFLOAD_NAME_MAX;
}

/* The slot index of (model, version): the existing one, else a free one, else one whose
 * totals the server acknowledged (its last report stays on the server, nothing is lost);
 * -1 when every slot holds unacknowledged totals of other versions. */
static int slot_for(struct mf_telemetry *t, const char *model, const char *version)
{
    int spare = -1;
    int free_found;
    mf_telemetry_version *v;

    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        v = &t->slot[i].v;
        if (v->model[0] && strcmp(v->model, model) == 0 && strcmp(v->version, version) == 0)
            return i;
        if (spare < 0 && !v->model[0])
            spare = i;
    }
    free_found = spare >= 0;
    /* Of the acknowledged slots, the one recorded into least recently. */
    for (int i = 0; !free_found && i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        if (!t->slot[i].dirty && (spare < 0 || t->last_use[i] < t->last_use[spare]))
            spare = i;
    }
    if (spare < 0)
        return -1;
    t->last_use[spare] = 0;
    memset(&t->slot[spare], 0, sizeof(t->slot[spare]));
    v = &t->slot[spare].v;
    memcpy(v->model, model, strlen(model) + 1);
    memcpy(v->version, version, strlen(version) + 1);
    (void)snprintf(v->offload.model_version, sizeof(v->offload.model_version), "%s", version);
    return spare;
}

/* The slot to record into, marked dirty; NULL with *err set when there is none. */
static mf_telemetry_version *take(int *err, struct mf_telemetry *t, const char *model,
                                  const char *version)
{
    int i;

    if (!name_ok(model) || !name_ok(version)) {
        *err = MF_E_INVALID;
        return NULL;
    }
    i = slot_for(t, model, version);
    if (i < 0) {
        *err = MF_E_LIMIT;
        return NULL;
    }
    t->slot[i].dirty = 1;
    t->last_use[i] = ++t->tick;
    *err = MF_OK;
    return &t->slot[i].v;
}

static uint64_t inc(uint64_t x)
{
    return x == UINT64_MAX ? x : x + 1;
}

int mf_telemetry_record_latency(mf_telemetry *t, const char *model, const char *version,
                                uint64_t microseconds)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);
    unsigned b = mf_telemetry_bucket(microseconds);

    if (!v)
        return err;
    if (v->latency[b] != UINT32_MAX)
        v->latency[b]++;
    v->inferences = inc(v->inferences);
    return MF_OK;
}

int mf_telemetry_record_memory(mf_telemetry *t, const char *model, const char *version,
                               uint64_t bytes)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    if (bytes > v->peak_memory)
        v->peak_memory = bytes;
    return MF_OK;
}

/* One outcome into a pair of counters: an install or a health verdict, each counted as
 * succeeded or failed for the version. */
static int record_outcome(mf_telemetry *t, const char *model, const char *version, int install,
                          int ok)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);
    uint64_t *n;

    if (!v)
        return err;
    if (install)
        n = ok ? &v->install_ok : &v->install_failed;
    else
        n = ok ? &v->health_ok : &v->health_failed;
    *n = inc(*n);
    return MF_OK;
}

int mf_telemetry_record_health(mf_telemetry *t, const char *model, const char *version, int ok)
{
    return record_outcome(t, model, version, 0, ok);
}

int mf_telemetry_record_install(mf_telemetry *t, const char *model, const char *version, int ok)
{
    return record_outcome(t, model, version, 1, ok);
}

int mf_telemetry_record_rollback(mf_telemetry *t, const char *model, const char *version,
                                 const char *reason)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    v->rollbacks = inc(v->rollbacks);
    (void)snprintf(v->last_rollback, sizeof(v->last_rollback), "%s", reason ? reason : "");
    return MF_OK;
}

int mf_telemetry_record_teacher(mf_telemetry *t, const char *model, const char *version, int agreed)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    v->teacher_compared = inc(v->teacher_compared);
    if (agreed)
        v->teacher_agreed = inc(v->teacher_agreed);
    return MF_OK;
}

int mf_telemetry_add_offload(mf_telemetry *t, const char *model, const char *version,
                             const mf_offload_telemetry *o)
{
    int err;
    mf_telemetry_version *v = take(&err, t, model, version);

    if (!v)
        return err;
    mf_offload_telemetry_merge(&v->offload, o); /* the offload module's own merge */
    return MF_OK;
}

const mf_telemetry_version *mf_telemetry_get(const mf_telemetry *t, const char *model,
                                             const char *version)
{
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++) {
        const mf_telemetry_version *v = &t->slot[i].v;

        if (v->model[0] && strcmp(v->model, model) == 0 && strcmp(v->version, version) == 0)
            return v;
    }
    return NULL;
}

void mf_telemetry_ack(mf_telemetry *t)
{
    for (int i = 0; i < MF_TELEMETRY_MAX_VERSIONS; i++)
        t->slot[i].dirty = 0;
}
