/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the SQLite store: what sqlite.c shares with sqlite_offload.c. The offload ops run
 * on the store's one connection under its lock, like every other op.
 */
#ifndef MF_SERVER_STORE_SQLITE_STORE_H
#define MF_SERVER_STORE_SQLITE_STORE_H

#include "store/store.h"

#include <sqlite3.h>

/* Under the store lock: a statement from the store's cache (prepared once per SQL text)
 * and giving it back (reset, bindings cleared; one outside the cache is finalized). */
int mf_sqlite__prepare(sqlite3_stmt **out, struct mf_store *base, struct mf_ctx *ctx,
                       const char *sql);
void mf_sqlite__finish(struct mf_store *base, sqlite3_stmt *st);
/* Copies a text column into dst (truncating), "" for NULL. */
void mf_sqlite__text_col(char *dst, size_t size, sqlite3_stmt *st, int col);

/* Takes the store lock and returns the connection; pair with mf_sqlite__unlock. */
sqlite3 *mf_sqlite__lock(struct mf_store *base);
void mf_sqlite__unlock(struct mf_store *base);

/* sqlite_offload.c: the ops of schema migration 4, semantics as in store.h. */
int mf_sqlite__sample_batch_put(int *replayed_out, int *accepted_out, int *dups_out,
                                struct mf_store *s, struct mf_ctx *ctx, const char *device_id,
                                const char *batch_id, const struct mf_store_sample *rows, size_t n);
int mf_sqlite__sample_label(struct mf_store *s, struct mf_ctx *ctx, const char *id,
                            const char *teacher_version, const char *teacher_output,
                            double confidence, int64_t now);
int mf_sqlite__samples_walk(struct mf_store *s, struct mf_ctx *ctx,
                            const struct mf_store_sample_query *q, mf_store_sample_fn fn,
                            void *payload);
int mf_sqlite__samples_delete(int64_t *deleted_out, struct mf_store *s, struct mf_ctx *ctx,
                              const char *device_id, int64_t before, mf_store_pair_fn orphan_fn,
                              void *payload);
int mf_sqlite__blob_ref(char who_out[MF_STORE_BLOB_REF_MAX], struct mf_store *s, struct mf_ctx *ctx,
                        const char *sha256);
int mf_sqlite__blob_released(int *released_out, struct mf_store *s, struct mf_ctx *ctx,
                             const char *sha256);
int mf_sqlite__hist_add(struct mf_store *s, struct mf_ctx *ctx, const struct mf_store_hist *h,
                        int replace);
int mf_sqlite__hists_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                          mf_store_hist_fn fn, void *payload);

/* sqlite_rollout.c: statement helpers the per-migration files share. `types` names the
 * parameters in order: 't' text, 'i' int64. write: one statement; *changes_out (may be
 * NULL) gets the rows it changed, *id_out (may be NULL) the rowid an INSERT made. walk:
 * visits each row of one query; a visitor's negative return stops the walk. */
typedef int (*mf_sqlite_row_fn)(sqlite3_stmt *st, void *fn, void *payload);
int mf_sqlite__write(int *changes_out, int64_t *id_out, struct mf_store *base, struct mf_ctx *ctx,
                     const char *sql, const char *types, ...);
int mf_sqlite__walk(struct mf_store *base, struct mf_ctx *ctx, mf_sqlite_row_fn visit, void *fn,
                    void *payload, const char *sql, const char *types, ...);

/* sqlite_rollout.c: the ops of the rollout migration, semantics as in store.h. */
int mf_sqlite__telemetry_put(struct mf_store *s, struct mf_ctx *ctx,
                             const struct mf_store_telemetry *t);
int mf_sqlite__telemetry_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                              mf_store_telemetry_fn fn, void *payload);
int mf_sqlite__rollout_put(struct mf_store *s, struct mf_ctx *ctx, struct mf_store_rollout *r,
                           const char *expect_state);
int mf_sqlite__rollout_get(struct mf_store_rollout *out, struct mf_store *s, struct mf_ctx *ctx,
                           int64_t id);
int mf_sqlite__rollouts_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                             mf_store_rollout_fn fn, void *payload);
int mf_sqlite__rollout_event_add(struct mf_store *s, struct mf_ctx *ctx,
                                 const struct mf_store_rollout_event *e);
int mf_sqlite__rollout_events_list(struct mf_store *s, struct mf_ctx *ctx, int64_t rollout_id,
                                   mf_store_rollout_event_fn fn, void *payload);

/* sqlite_distill.c: the ops of the distillation migration, semantics as in store.h. */
int mf_sqlite__distill_run_put(struct mf_store *s, struct mf_ctx *ctx,
                               struct mf_store_distill_run *r, const char *expect_state);
int mf_sqlite__distill_run_get(struct mf_store *s, struct mf_ctx *ctx, int64_t id,
                               mf_store_distill_run_fn fn, void *payload);
int mf_sqlite__distill_runs_list(struct mf_store *s, struct mf_ctx *ctx, const char *model,
                                 int64_t limit, mf_store_distill_run_fn fn, void *payload);

#endif /* MF_SERVER_STORE_SQLITE_STORE_H */
