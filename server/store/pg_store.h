/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the PostgreSQL store: its handle and the op-level helpers pg.c and pg_fleet.c share.
 * pg.c has the ops table, open/migrate and the registry ops; pg_fleet.c the director inputs,
 * roles, jobs and deltas of schema migration 3.
 */
#ifndef MF_SERVER_STORE_PG_STORE_H
#define MF_SERVER_STORE_PG_STORE_H

#include "store/pg_pool.h"
#include "store/store.h"

struct mf_pg_store {
    struct mf_store base; /* first: callers see only this */
    struct mf_pg_pool *pool;
    mf_allocator alloc;
};

/* One statement on a borrowed connection. `res_out` may be NULL when the rows are not
 * needed; otherwise the caller PQclear()s it (also on failure, where it is NULL). */
int mf_pg__run(PGresult **res_out, struct mf_store *base, struct mf_ctx *ctx, const char *sql,
               const struct mf_pg_params *p, const char *what);
/* mf_pg__run for an UPDATE/DELETE that must change a row: MF_E_NOTFOUND with `missing`
 * (a complete message) when it changed none. */
int mf_pg__run_change(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                      const struct mf_pg_params *p, const char *missing);
/* mf_pg__walk (single-row mode) on a borrowed connection. */
int mf_pg__store_walk(struct mf_store *base, struct mf_ctx *ctx, const char *sql,
                      const struct mf_pg_params *p, mf_pg_row_fn visit, void *payload);
/* Applies the pending migrations up to schema `target` (migrate is this up to the latest);
 * tests use it to build a store as an older release left it. MF_E_INVALID for a target
 * beyond the latest. */
int mf_pg__migrate_to(int *applied_out, struct mf_store *base, struct mf_ctx *ctx, int target);
/* Borrows a connection for one op; every op pairs it with mf_pg__put. */
int mf_pg__get(PGconn **out, struct mf_store *base, struct mf_ctx *ctx);
void mf_pg__put(struct mf_store *base, PGconn *c);

/* Runs `call` (which uses `c`) between BEGIN and COMMIT on a borrowed connection; a failure
 * rolls back and keeps the callee's message. Sets `err`. */
#define MF_PG_IN_TRANSACTION(base, ctx, c, call)                                                   \
    do {                                                                                           \
        err = mf_pg__get(&(c), base, ctx);                                                         \
        if (err == MF_OK) {                                                                        \
            err = mf_pg__begin(c, ctx);                                                            \
            if (err == MF_OK)                                                                      \
                err = mf_pg__end(c, ctx, (call));                                                  \
            mf_pg__put(base, c);                                                                   \
        }                                                                                          \
    } while (0)

/* The directives of device row `d` for the model `model_expr` (an SQL expression) as five
 * columns (scopes: 1 device, 2 group: "group/version" of the first group by name that pins
 * the model, 3 channel, 4 fleet), and their reader from column `col` of a result row. */
#define MF_PG_DIRECTIVE_COLUMNS(model_expr)                                                        \
    "d.channel,"                                                                                   \
    " (SELECT version FROM pins WHERE scope = 1 AND target = d.device_id AND model = " model_expr  \
    "),"                                                                                           \
    " (SELECT p.target || '/' || p.version FROM pins p JOIN device_groups g ON g.grp = p.target"   \
    "   AND g.device_id = d.id WHERE p.scope = 2 AND p.model = " model_expr                        \
    "   ORDER BY p.target COLLATE \"C\" LIMIT 1),"                                                 \
    " (SELECT version FROM pins WHERE scope = 3 AND target = d.channel AND model = " model_expr    \
    "),"                                                                                           \
    " (SELECT version FROM pins WHERE scope = 4 AND target = '*' AND model = " model_expr ")"
void mf_pg__directives_row(struct mf_store_directives *out, const PGresult *res, int row, int col);

/* pg.c: raises the store epoch once per session before it issues sequence numbers without
 * waiting for the WAL (its comment says why). pg_checkin.c: the checkin_begin op. */
int mf_pg__raise_epoch(PGconn *c, struct mf_ctx *ctx);
int mf_pg__checkin_begin(struct mf_store *s, struct mf_store_checkin *items, size_t n);
/* Check-ins that went through a batch's one statement so far, in this process (a statement
 * that fails falls back to one statement each, silently but for this). */
uint64_t mf_pg__checkin_batched(void);

/* pg_fleet.c: the ops of schema migration 3, semantics as in store.h. */
int mf_pg__device_groups_set(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                             const char *const *groups, size_t n);
int mf_pg__device_channel_set(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                              const char *channel);
int mf_pg__groups_list(struct mf_store *s, struct mf_ctx *ctx, mf_store_pair_fn fn, void *payload);
int mf_pg__device_groups_get(struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                             mf_store_pair_fn fn, void *payload);
int mf_pg__device_revoke(struct mf_store *s, struct mf_ctx *ctx, const char *device_id);
int mf_pg__pin_set(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_pin *p);
int mf_pg__pin_clear(struct mf_store *s, struct mf_ctx *ctx, int scope, const char *target,
                     const char *model);
int mf_pg__pins_list(struct mf_store *s, struct mf_ctx *ctx, mf_store_pin_fn fn, void *payload);
int mf_pg__directives_get(struct mf_store_directives *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *device_id, const char *model);
int mf_pg__admin_token_insert(struct mf_store *s, struct mf_ctx *ctx,
                              const uint8_t hash[MF_SHA256_LEN], int role, const char *name,
                              int64_t now);
int mf_pg__admin_token_auth(int *role_out, struct mf_store *s, struct mf_ctx *ctx,
                            const uint8_t hash[MF_SHA256_LEN]);
int mf_pg__admin_token_revoke(struct mf_store *s, struct mf_ctx *ctx, const char *id);
int mf_pg__admin_tokens_list(struct mf_store *s, struct mf_ctx *ctx, mf_store_token_fn fn,
                             void *payload);
int mf_pg__job_enqueue(struct mf_store *s, struct mf_ctx *ctx, const char *kind, const char *arg,
                       int64_t now);
int mf_pg__job_claim(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                     const char *owner, int64_t now, int64_t lease_s);
int mf_pg__job_complete(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner);
int mf_pg__job_fail(struct mf_store *s, struct mf_ctx *ctx, int64_t id, const char *owner,
                    const char *error);
int mf_pg__job_counts(int64_t *queued_out, int64_t *running_out, struct mf_store *s,
                      struct mf_ctx *ctx, int64_t now);
int mf_pg__delta_insert(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_delta *d);
int mf_pg__delta_find(struct mf_store_delta *out, struct mf_store *s, struct mf_ctx *ctx,
                      const char *from_sha256, const char *to_sha256);
int mf_pg__delta_count(int64_t *count_out, struct mf_store *s, struct mf_ctx *ctx);
int mf_pg__fleet_sha256s(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         mf_store_pair_fn fn, void *payload);

/* pg_offload.c: the ops of schema migration 4, semantics as in store.h. */
int mf_pg__sample_batch_put(int *replayed_out, int *accepted_out, int *dups_out, struct mf_store *s,
                            struct mf_ctx *ctx, const char *device_id, const char *batch_id,
                            const struct mf_store_sample *rows, size_t n);
int mf_pg__sample_label(struct mf_store *s, struct mf_ctx *ctx, const char *id,
                        const char *teacher_version, const char *teacher_output, double confidence,
                        int64_t now);
int mf_pg__samples_walk(struct mf_store *s, struct mf_ctx *ctx,
                        const struct mf_store_sample_query *q, mf_store_sample_fn fn,
                        void *payload);
int mf_pg__samples_delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                          void *payload);
int mf_pg__blob_ref(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s, struct mf_ctx *ctx,
                    const char *sha256);
int mf_pg__blob_released(int *released_out, struct mf_store *s, struct mf_ctx *ctx,
                         const char *sha256);
int mf_pg__hist_add(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_hist *h,
                    int replace);
int mf_pg__hists_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                      mf_store_hist_fn fn, void *payload);

/* pg_fleet.c: job_claim restricted to one kind. pg_rollout.c: the ops of the rollout
 * migration. Semantics as in store.h. */
int mf_pg__job_claim_kind(struct mf_store_job *out, struct mf_store *s, struct mf_ctx *ctx,
                          const char *kind, const char *owner, int64_t now, int64_t lease_s);
int mf_pg__telemetry_put(struct mf_store *s, struct mf_ctx *ctx,
                         const struct mf_store_telemetry *t);
int mf_pg__telemetry_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                          mf_store_telemetry_fn fn, void *payload);
int mf_pg__rollout_put(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                       const char *expect_state);
int mf_pg__rollout_get(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                       int64_t id);
int mf_pg__rollouts_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                         mf_store_rollout_fn fn, void *payload);
int mf_pg__rollout_event_add(struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_store_rollout_event *e);
int mf_pg__rollout_events_list(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id,
                               mf_store_rollout_event_fn fn, void *payload);

/* pg_distill.c: the ops of the distillation migration, semantics as in store.h. */
int mf_pg__distill_run_put(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_distill_run *r,
                           const char *expect_state);
int mf_pg__distill_run_get(struct mf_store *s, struct mf_ctx *ctx, int64_t id,
                           mf_store_distill_run_fn fn, void *payload);
int mf_pg__distill_runs_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                             int64_t limit, mf_store_distill_run_fn fn, void *payload);

#endif /* MF_SERVER_STORE_PG_STORE_H */
