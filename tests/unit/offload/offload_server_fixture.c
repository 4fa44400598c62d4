/* SPDX-License-Identifier: Apache-2.0 */
/* The in-process mf-server of the offload tests (offload_server_fixture.h). */
#define _GNU_SOURCE
#include "offload_server_fixture.h"
#include "mf_test.h"
#include "kit_fs.h"
#include "offload_e2e_fixture.h"

#include "app/server.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

void offload_server_fx_start(struct offload_server_fx *fx, const char *tmp_name,
                             const char *config_json, const char *device_id)
{
    struct mf_server_options o;
    struct mf_ctx ctx;
    char enroll[128];
    int changed = 0;
    FILE *f;

    memset(fx, 0, sizeof(*fx));
    (void)signal(SIGPIPE, SIG_IGN);
    mf_kit_fs_mkdtemp(fx->dir, sizeof(fx->dir), tmp_name);
    (void)snprintf(fx->data, sizeof(fx->data), "%s/data", fx->dir);
    (void)snprintf(fx->config, sizeof(fx->config), "%s/offload.json", fx->dir);
    f = fopen(fx->config, "w");
    assert_non_null(f);
    assert_true(fputs(config_json, f) >= 0);
    assert_int_equal(fclose(f), 0);
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_server__init_data_dir(&changed, &ctx, fx->data, NULL), MF_OK);
    mf_server__options_init(&o);
    o.data_dir = fx->data;
    o.listen = "127.0.0.1:0";
    o.offload_config = fx->config;
    o.device_rate = 0;
    if (mf_server__start(&fx->srv, &ctx, &o) < 0)
        fail_msg("start: %s", mf_ctx__errmsg(&ctx));
    fx->port = mf_server__port(fx->srv);
    (void)snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:%u", fx->port);
    mf_kit_fs_read_line(fx->admin, sizeof(fx->admin), fx->data, "admin.token");
    mf_kit_fs_read_line(enroll, sizeof(enroll), fx->data, "enroll.token");
    assert_int_equal(e2e_enroll(fx->cred, sizeof(fx->cred), fx->url, enroll, device_id), 0);
}

void offload_server_fx_stop(struct offload_server_fx *fx)
{
    mf_server__stop(fx->srv);
    fx->srv = NULL;
    mf_kit_fs_rmtree(fx->dir);
}
