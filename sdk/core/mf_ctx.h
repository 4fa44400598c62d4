/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the context every handle embeds. It carries the allocator, the log sink and
 * the per-handle error message buffer, so errors never allocate and nothing depends on
 * global or thread-local state (STYLE rule 16).
 */
#ifndef MF_CORE_CTX_H
#define MF_CORE_CTX_H

#include "mf/alloc.h"
#include "mf/error.h"
#include "mf/log.h"

#define MF_ERRMSG_MAX 256

struct mf_ctx {
    mf_allocator alloc; /* copied at init; never NULL callbacks */
    mf_log_fn log_fn;   /* NULL: lines are dropped */
    void *log_payload;
    const char *module; /* static string naming the owner in log lines */
    char errmsg[MF_ERRMSG_MAX];
};

/* Initialise `ctx`; `alloc` NULL means the libc default, `log_fn` may be NULL. */
void mf_ctx__init(struct mf_ctx *ctx, const mf_allocator *alloc, mf_log_fn log_fn,
                  void *log_payload, const char *module);

/*
 * Record a one-line message for `code` and return `code`. Call it where the failure is
 * first detected; callers above propagate the code without touching the message.
 * Over-long messages are truncated, never allocated.
 */
int mf_fail(struct mf_ctx *ctx, int code, const char *fmt, ...) MF_PRINTF(3, 4);

/* Message of the last failure, "" when none. Borrowed from `ctx`. */
const char *mf_ctx__errmsg(const struct mf_ctx *ctx);

/*
 * A constructor failed and there is no handle to read the message from: copy it into the
 * caller's error buffer (NULL or size 0: none; truncated to fit) and log it at ERROR once.
 * Returns `code`.
 */
int mf_ctx__fail_new(const struct mf_ctx *ctx, char *errbuf, size_t errbuf_size, int code);

/* Clear the message buffer (at the start of a public API call that may fail). */
void mf_ctx__clear(struct mf_ctx *ctx);

void mf_ctx__log(const struct mf_ctx *ctx, int level, const char *fmt, ...) MF_PRINTF(3, 4);

#define MF_LOG_ERR(ctx, ...) mf_ctx__log((ctx), MF_LOG_ERROR, __VA_ARGS__)
#define MF_LOG_WARN(ctx, ...) mf_ctx__log((ctx), MF_LOG_WARN, __VA_ARGS__)
#define MF_LOG_INFO(ctx, ...) mf_ctx__log((ctx), MF_LOG_INFO, __VA_ARGS__)
#ifdef MF_ENABLE_DEBUG_LOG
#define MF_LOG_DBG(ctx, ...) mf_ctx__log((ctx), MF_LOG_DEBUG, __VA_ARGS__)
#define MF_LOG_TRACE(ctx, ...) mf_ctx__log((ctx), MF_LOG_TRACE, __VA_ARGS__)
#else
/* Compiled out, but the arguments are still type-checked by the dead branch. */
#define MF_LOG_DBG(ctx, ...)                                                                       \
    do {                                                                                           \
        if (0)                                                                                     \
            mf_ctx__log((ctx), MF_LOG_DEBUG, __VA_ARGS__);                                         \
    } while (0)
#define MF_LOG_TRACE(ctx, ...)                                                                     \
    do {                                                                                           \
        if (0)                                                                                     \
            mf_ctx__log((ctx), MF_LOG_TRACE, __VA_ARGS__);                                         \
    } while (0)
#endif

static inline void *mf_ctx__alloc(struct mf_ctx *ctx, size_t n)
{
    return mf_alloc(&ctx->alloc, n);
}

static inline void mf_ctx__free(struct mf_ctx *ctx, void *p)
{
    mf_free(&ctx->alloc, p);
}

#endif /* MF_CORE_CTX_H */
