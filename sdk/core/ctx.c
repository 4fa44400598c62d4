/* SPDX-License-Identifier: Apache-2.0 */
/* Per-handle error messages and log routing (see mf_ctx.h). */
#include "mf_ctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mf_ctx__init(struct mf_ctx *ctx, const mf_allocator *alloc, mf_log_fn log_fn,
                  void *log_payload, const char *module)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->alloc = alloc ? *alloc : *mf_allocator_default();
    ctx->log_fn = log_fn;
    ctx->log_payload = log_payload;
    ctx->module = module ? module : "mf";
}

int mf_fail(struct mf_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
    va_end(ap);
    return code;
}

const char *mf_ctx__errmsg(const struct mf_ctx *ctx)
{
    return ctx->errmsg;
}

int mf_ctx__fail_new(const struct mf_ctx *ctx, char *errbuf, size_t errbuf_size, int code)
{
    if (errbuf && errbuf_size > 0)
        (void)snprintf(errbuf, errbuf_size, "%s", ctx->errmsg);
    MF_LOG_ERR(ctx, "%s", ctx->errmsg);
    return code;
}

void mf_ctx__clear(struct mf_ctx *ctx)
{
    ctx->errmsg[0] = '\0';
}

/*
 * Formats and sends one line. A frame of its own, apart from mf_ctx__log(): a variadic
 * function's frame holds the register save area its va_list reads from (176 bytes on x86-64,
 * 192 on AArch64), and the line with it went over the 512-byte bound on AArch64 (544).
 */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void
log_line(const struct mf_ctx *ctx, int level, const char *fmt, va_list ap) MF_PRINTF(3, 0);

static void log_line(const struct mf_ctx *ctx, int level, const char *fmt, va_list ap)
{
    /* One line, on the stack: logging must work when the allocator is exhausted. */
    char line[256];

    (void)vsnprintf(line, sizeof(line), fmt, ap);
    ctx->log_fn(ctx->log_payload, level, ctx->module, line);
}

void mf_ctx__log(const struct mf_ctx *ctx, int level, const char *fmt, ...)
{
    va_list ap;

    if (!ctx->log_fn)
        return;
    /* The core's own sink says which levels it drops: drop them before formatting, which
     * costs more than the rest of a line's way (a request's access line at --log-level warn
     * showed in a check-in's profile: bench/server/README.md). */
    if (ctx->log_fn == mf_log_stderr &&
        level > (ctx->log_payload ? *(const int *)ctx->log_payload : MF_LOG_INFO))
        return;
    va_start(ap, fmt);
    log_line(ctx, level, fmt, ap);
    va_end(ap);
}
