/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: what ops set per device group (poll interval with jitter, install window) in a
 * check-in's answer (docs/protocol.md, "Poll interval", "Install window"). */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_SETTINGS_H
#define MF_SERVER_DIRECTOR_CHECKIN_SETTINGS_H

#include "director/checkin_answer.h"
#include "director/checkin_cache.h"
#include "http/http_req.h"
#include "store/store.h"

/* The device's group settings into *out (none: window_start_min -1); read from the store only
 * when some group has one (the node caches whether any has, under the view's generation). */
int mf_checkin_settings__read(struct mf_store_group_settings *out, const struct mf_ccache_view *v,
                              struct mf_httpd_req *r);

/* poll_interval_s, poll_jitter_pct and poll_group (when a group set them, else the server's
 * defaults), and the install window in UTC minutes. */
int mf_checkin_settings__add(struct mf_answer *ans, const struct mf_store_group_settings *g,
                             const struct mf_httpd_env *env);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_SETTINGS_H */
