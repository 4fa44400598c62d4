/* SPDX-License-Identifier: Apache-2.0 */
/* The server's options: their defaults and the listen address they name (see server.h). */
#include "app/server.h"

#include "director/director.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void mf_server__options_init(struct mf_server_options *o)
{
    memset(o, 0, sizeof(*o));
    o->listen = "127.0.0.1:8080";
    o->max_upload = MF_SERVER_DEFAULT_MAX_UPLOAD;
    o->conn_timeout_s = 30;
    o->conn_limit = 4096;
    o->threads = 0; /* one per core with the check-in stage, else the store's default */
    o->device_rate = 5.0;
    o->device_burst = 30.0;
    o->delta_worker = 1;
    o->delta_k = 3;
    o->sign_batch = MF_DIRECTOR_BATCH_DEFAULT;
    o->checkin_stage = 1;
    o->header_timeout_s = 30;
    o->body_min_rate = 64;
    o->body_rate_window_s = 20;
    o->conn_per_addr = MF_SERVER_CONN_PER_ADDR_AUTO;
    o->webhook_sender = 1;
}

int mf_server__parse_listen(struct sockaddr_storage *out, struct mf_ctx *ctx, const char *spec)
{
    char host[64];
    const char *port_s, *end_host;
    unsigned long port;
    char *end;
    size_t n;

    memset(out, 0, sizeof(*out));
    if (spec[0] == '[') {
        end_host = strchr(spec, ']');
        if (!end_host || end_host[1] != ':')
            return mf_fail(ctx, MF_E_INVALID, "listen address '%s' is not [V6]:PORT", spec);
        n = (size_t)(end_host - spec - 1);
        port_s = end_host + 2;
        spec++;
    } else {
        end_host = strrchr(spec, ':');
        if (!end_host)
            return mf_fail(ctx, MF_E_INVALID, "listen address '%s' is not HOST:PORT", spec);
        n = (size_t)(end_host - spec);
        port_s = end_host + 1;
    }
    if (n == 0 || n >= sizeof(host))
        return mf_fail(ctx, MF_E_INVALID, "bad host in listen address '%s'", spec);
    memcpy(host, spec, n);
    host[n] = '\0';
    port = strtoul(port_s, &end, 10);
    if (*port_s < '0' || *port_s > '9' || *end != '\0' || port > 65535)
        return mf_fail(ctx, MF_E_INVALID, "bad port '%s' in listen address", port_s);

    if (strchr(host, ':')) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;

        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
            return mf_fail(ctx, MF_E_INVALID, "bad IPv6 address '%s'", host);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)out;

        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
            return mf_fail(ctx, MF_E_INVALID, "bad IPv4 address '%s' (use a numeric address)",
                           host);
    }
    return MF_OK;
}
