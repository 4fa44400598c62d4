/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Group settings (role ops; docs/protocol.md "Poll interval" and "Install window"): what a
 * group's devices are told in every check-in answer. The poll interval (with its jitter) wins
 * over a device's own interval; the install window defers installs to a daily time range.
 * Bounds are checked here, so nothing out of range reaches a device: a body with an unknown
 * key, a wrong type or a value out of range is a 400 naming the key.
 */
#include "handlers/handlers.h"

#include <stdio.h>
#include <string.h>

#define POLL_MIN_S 1
#define POLL_MAX_S 86400
#define JITTER_MAX_PCT 50
#define JITTER_DEFAULT_PCT 10
#define OFFSET_MIN_MIN (-12 * 60) /* UTC-12:00 .. UTC+14:00 */
#define OFFSET_MAX_MIN (14 * 60)

/* 400 naming the first member of the body that is not in `known` (NULL-terminated). */
static int refuse_unknown_keys(struct mf_httpd_req *r, const char *const *known)
{
    const char *unknown = mf_handlers__unknown_member(r->json, known);

    if (unknown)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST, "unknown field '%s'", unknown);
    return MF_OK;
}

/* An optional integer member in [lo, hi] into *out (left as is when absent); 0, or a 400. */
static int int_field(int64_t *out, struct mf_httpd_req *r, const char *key, int required,
                     int64_t lo, int64_t hi)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->json, key);

    if (!v && !required)
        return MF_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field '%s' must be an integer in %lld..%lld", key,
                                     (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    return MF_OK;
}

/* "HH:MM" (00:00..23:59) into minutes of the day; 0, or a 400 naming the key. */
static int time_field(int64_t *out, struct mf_httpd_req *r, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->json, key));
    int ok = s && strlen(s) == 5 && s[2] == ':';

    for (int i = 0; ok && i < 5; i++)
        ok = i == 2 || (s[i] >= '0' && s[i] <= '9');
    if (ok)
        *out = ((s[0] - '0') * 10 + (s[1] - '0')) * 60 + (s[3] - '0') * 10 + (s[4] - '0');
    if (!ok || (s[0] - '0') * 10 + (s[1] - '0') > 23 || (s[3] - '0') * 10 + (s[4] - '0') > 59)
        return mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                     "field '%s' must be a time \"HH:MM\" in 00:00..23:59", key);
    return MF_OK;
}

/* 404 with the store's message ("unknown group", "has no ... set"), else 204. */
static int settings_result(struct mf_httpd_req *r, int err, const char *what)
{
    char done[192];

    (void)snprintf(done, sizeof(done), "group %s: %s", r->params[0], what);
    return mf_handlers__reply_changed(r, err, done);
}

int mf_handlers__group_poll_put(struct mf_httpd_req *r)
{
    static const char *const known[] = {"interval_s", "jitter_pct", NULL};
    int64_t interval = 0, jitter = JITTER_DEFAULT_PCT;
    char what[64];
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = refuse_unknown_keys(r, known);
    if (err == MF_OK && !r->resp)
        err = int_field(&interval, r, "interval_s", 1, POLL_MIN_S, POLL_MAX_S);
    if (err == MF_OK && !r->resp)
        err = int_field(&jitter, r, "jitter_pct", 0, 0, JITTER_MAX_PCT);
    if (err < 0 || r->resp)
        return err;
    (void)snprintf(what, sizeof(what), "poll interval %llds +-%lld%%", (long long)interval,
                   (long long)jitter);
    err = r->env->store->ops->director->group_poll_set(r->env->store, &r->ctx, r->params[0],
                                                       interval, jitter, mf_handlers__now());
    return settings_result(r, err, what);
}

int mf_handlers__group_poll_delete(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    err = r->env->store->ops->director->group_poll_set(r->env->store, &r->ctx, r->params[0], 0, 0,
                                                       mf_handlers__now());
    return settings_result(r, err, "poll interval cleared");
}

int mf_handlers__group_window_put(struct mf_httpd_req *r)
{
    static const char *const known[] = {"start", "end", "utc_offset_min", NULL};
    int64_t start = 0, end = 0, offset = 0;
    char what[80];
    int err = mf_handlers__check_names(r, 1);

    if (err == MF_OK && !r->resp)
        err = refuse_unknown_keys(r, known);
    if (err == MF_OK && !r->resp)
        err = time_field(&start, r, "start");
    if (err == MF_OK && !r->resp)
        err = time_field(&end, r, "end");
    if (err == MF_OK && !r->resp)
        err = int_field(&offset, r, "utc_offset_min", 0, OFFSET_MIN_MIN, OFFSET_MAX_MIN);
    if (err == MF_OK && !r->resp && start == end)
        err = mf_httpd__reply_error(r, MHD_HTTP_BAD_REQUEST,
                                    "fields 'start' and 'end' must differ (an empty window "
                                    "would defer installs forever)");
    if (err < 0 || r->resp)
        return err;
    (void)snprintf(what, sizeof(what), "install window %02lld:%02lld-%02lld:%02lld UTC%+lldmin",
                   (long long)(start / 60), (long long)(start % 60), (long long)(end / 60),
                   (long long)(end % 60), (long long)offset);
    err = r->env->store->ops->director->group_window_set(r->env->store, &r->ctx, r->params[0],
                                                         start, end, offset, mf_handlers__now());
    return settings_result(r, err, what);
}

int mf_handlers__group_window_delete(struct mf_httpd_req *r)
{
    int err = mf_handlers__check_names(r, 1);

    if (err < 0 || r->resp)
        return err;
    err = r->env->store->ops->director->group_window_set(r->env->store, &r->ctx, r->params[0], -1,
                                                         0, 0, mf_handlers__now());
    return settings_result(r, err, "install window cleared");
}

/* {"group": g, "poll_interval_s": n|null, "poll_jitter_pct": n|null,
 *  "install_window": {"start": "HH:MM", "end": "HH:MM", "utc_offset_min": n}|null,
 *  "updated_at": unix seconds} */
static int add_settings(void *payload, const struct mf_store_group_settings *g)
{
    cJSON *o = cJSON_CreateObject(), *w = NULL;
    char start[8], end[8];
    int ok;

    if (!o || !cJSON_AddItemToArray(payload, o)) {
        cJSON_Delete(o);
        return MF_E_NOMEM;
    }
    /* From here on `o` is the list's: freed with it. */
    ok = cJSON_AddStringToObject(o, "group", g->group) != NULL;
    ok = ok && (g->poll_interval_s > 0
                    ? cJSON_AddNumberToObject(o, "poll_interval_s", (double)g->poll_interval_s) &&
                          cJSON_AddNumberToObject(o, "poll_jitter_pct", (double)g->poll_jitter_pct)
                    : cJSON_AddNullToObject(o, "poll_interval_s") &&
                          cJSON_AddNullToObject(o, "poll_jitter_pct"));
    if (ok && g->window_start_min >= 0) {
        (void)snprintf(start, sizeof(start), "%02d:%02d", (int)(g->window_start_min / 60),
                       (int)(g->window_start_min % 60));
        (void)snprintf(end, sizeof(end), "%02d:%02d", (int)(g->window_end_min / 60),
                       (int)(g->window_end_min % 60));
        w = cJSON_AddObjectToObject(o, "install_window");
        ok = w && cJSON_AddStringToObject(w, "start", start) &&
             cJSON_AddStringToObject(w, "end", end) &&
             cJSON_AddNumberToObject(w, "utc_offset_min", (double)g->window_utc_offset_min);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "install_window") != NULL;
    }
    ok = ok && cJSON_AddNumberToObject(o, "updated_at", (double)g->updated_at);
    return ok ? MF_OK : MF_E_NOMEM;
}

MF_HANDLERS_LISTING(mf_handlers__group_settings_list, "group_settings", director,
                    group_settings_list, add_settings)
