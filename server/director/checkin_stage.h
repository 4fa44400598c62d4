/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check-in stage: one thread that runs check-ins in groups off the MHD workers. The
 * check-in handler parses and validates a request in its MHD worker, then hands it here
 * and suspends the connection, so the worker goes on serving its other connections instead
 * of sleeping on the store or the signer. The stage takes everything queued (up to
 * --checkin-batch), runs one store call and one signature for the whole group
 * (mf_checkin_flow__group, checkin_flow.h) and resumes each connection; the router then queues the
 * answer (docs/architecture.md, "Check-in path").
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_STAGE_H
#define MF_SERVER_DIRECTOR_CHECKIN_STAGE_H

#include "http/http_req.h"

struct mf_checkin_stage;

/* Starts the stage thread; a group holds at most `max` check-ins (1..
 * MF_STORE_CHECKIN_BATCH_MAX, clamped). MF_OK, MF_E_NOMEM or MF_E_GENERIC (no thread). */
int mf_checkin_stage__start(struct mf_checkin_stage **out, struct mf_ctx *ctx, size_t max);

/* Suspends r's connection and queues r: returns 1, and the stage owns r until it resumes
 * the connection. Returns 0 (nothing done) once the stage is stopping: the caller runs
 * the check-in inline. Call from the access handler only. */
int mf_checkin_stage__submit(struct mf_checkin_stage *st, struct mf_httpd_req *r);

/* Refuses new requests (submit returns 0 from then on), answers every queued one, resumes
 * their connections and joins the thread. Before MHD_stop_daemon: MHD must not be stopped
 * with suspended connections. The stage stays allocated, since MHD's workers may still call
 * submit until the daemon has stopped: free it after that. Idempotent; NULL is a no-op. */
void mf_checkin_stage__stop(struct mf_checkin_stage *st);
/* Stops it if need be and frees it: after MHD_stop_daemon. NULL is a no-op. */
void mf_checkin_stage__free(struct mf_checkin_stage *st);

/* Groups run and check-ins they held so far. */
void mf_checkin_stage__stats(struct mf_checkin_stage *st, uint64_t *groups, uint64_t *checkins);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_STAGE_H */
