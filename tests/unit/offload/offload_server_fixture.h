/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The real mf-server in-process for the offload tests that talk to it (test_offload_server.c,
 * test_offload_e2e.c): a scratch directory with its data directory and the offload config the
 * test gives, listening on 127.0.0.1 (an ephemeral port), SQLite store, no device rate limit
 * (the tests send bursts), and one device enrolled through the enrolment route.
 */
#ifndef MF_OFFLOAD_SERVER_FIXTURE_H
#define MF_OFFLOAD_SERVER_FIXTURE_H

#include <stdint.h>

struct mf_server;

struct offload_server_fx {
    char dir[64], data[96], config[128];
    char url[64];    /* http://127.0.0.1:<port> */
    char admin[128]; /* the admin token the data directory was made with */
    char cred[256];  /* the enrolled device's credential */
    struct mf_server *srv;
    uint16_t port;
};

/* Writes `config_json` as the offload config into a new scratch directory named after
 * `tmp_name`, starts the server on it and enrols `device_id`; any failure fails the test. */
void offload_server_fx_start(struct offload_server_fx *fx, const char *tmp_name,
                             const char *config_json, const char *device_id);
/* Stops the server and removes the scratch directory. */
void offload_server_fx_stop(struct offload_server_fx *fx);

#endif /* MF_OFFLOAD_SERVER_FIXTURE_H */
