/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store work of concurrent check-ins, grouped (director/batcher.h): the check-ins that reach
 * the store while another group is in it go in together as one checkin_begin call, so one
 * transaction (SQLite) or one statement (PostgreSQL) carries many. That call's fixed cost
 * (the commit, the locks, the round trip, the backend's statement start) was most of a
 * check-in's store work (docs/architecture.md, "Check-in path"). One per server.
 */
#ifndef MF_SERVER_DIRECTOR_CHECKIN_BATCH_H
#define MF_SERVER_DIRECTOR_CHECKIN_BATCH_H

#include "store/store.h"

struct mf_checkin_batch;

/* max: check-ins per group, 1 (no grouping) to MF_STORE_CHECKIN_BATCH_MAX. MF_OK, or
 * MF_E_NOMEM / MF_E_GENERIC with a message. Ownership: free it after the last check-in. */
int mf_checkin_batch__new(struct mf_checkin_batch **out, struct mf_ctx *ctx, struct mf_store *s,
                          size_t max);
void mf_checkin_batch__free(struct mf_checkin_batch *b); /* NULL is a no-op */

/* checkin_begin of one check-in, grouped with those in flight; thread-safe. Its error. */
int mf_checkin_batch__begin(struct mf_checkin_batch *b, struct mf_store_checkin *c);

/* Groups run and check-ins they carried so far. */
void mf_checkin_batch__stats(struct mf_checkin_batch *b, uint64_t *groups, uint64_t *checkins);

#endif /* MF_SERVER_DIRECTOR_CHECKIN_BATCH_H */
