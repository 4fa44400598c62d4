/* SPDX-License-Identifier: Apache-2.0 */
/* The check-in answer's poll interval and install window, from the device's group settings
 * (checkin_settings.h). */
#include "director/checkin_settings.h"

#include <string.h>

/* The device's group settings; read only when some group has one (the node caches whether
 * any has, under the generation checkin_begin read). */
int mf_checkin_settings__read(struct mf_store_group_settings *out, const struct mf_ccache_view *v,
                              struct mf_httpd_req *r)
{
    int any = 1;
    int err = mf_ccache__group_settings_any(&any, v);

    memset(out, 0, sizeof(*out));
    out->window_start_min = -1;
    if (err == MF_OK && any)
        err = r->env->store->ops->director->device_settings_get(out, r->env->store, &r->ctx,
                                                                r->device_id);
    return err;
}

/* Minutes of the day in UTC of `min` on a clock at UTC + offset_min. */
static uint64_t utc_minute(int64_t min, int64_t offset_min)
{
    return (uint64_t)(((min - offset_min) % 1440 + 1440) % 1440);
}

/* poll_interval_s, poll_jitter_pct and poll_group (when a group set them, else the server's
 * defaults), and the install window in UTC minutes (docs/protocol.md, "Poll interval",
 * "Install window"). */
int mf_checkin_settings__add(struct mf_answer *ans, const struct mf_store_group_settings *g,
                             const struct mf_httpd_env *env)
{
    int by_group = g->group[0] != 0;
    int err = mf_answer__count(ans, "poll_interval_s",
                               by_group ? (uint64_t)g->poll_interval_s : env->poll_interval_s);

    if (err == MF_OK)
        err = mf_answer__count(ans, "poll_jitter_pct",
                               by_group ? (uint64_t)g->poll_jitter_pct : env->poll_jitter_pct);
    if (err == MF_OK && by_group)
        err = mf_answer__str(ans, "poll_group", g->group);
    if (err == MF_OK && g->window_start_min >= 0) {
        err = mf_answer__open(ans, "install_window", '{');
        if (err == MF_OK)
            err = mf_answer__count(ans, "start_min",
                                   utc_minute(g->window_start_min, g->window_utc_offset_min));
        if (err == MF_OK)
            err = mf_answer__count(ans, "end_min",
                                   utc_minute(g->window_end_min, g->window_utc_offset_min));
        if (err == MF_OK)
            err = mf_answer__close(ans, '}');
    }
    return err;
}
