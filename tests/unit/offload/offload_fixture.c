/* SPDX-License-Identifier: Apache-2.0 */
/* Offload test fixture (see offload_fixture.h). */
#include "offload_fixture.h"
#include "kit_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int tick(struct tplat *t)
{
    long n = t->io_calls++;

    return t->fail_at >= 0 && n >= t->fail_at;
}

static int w_random(void *p, void *buf, size_t len)
{
    struct tplat *t = p;

    return t->real.random(t->real.payload, buf, len);
}

static uint64_t w_mono(void *p)
{
    struct tplat *t = p;

    return t->fake_clock ? t->mono_ms : t->real.monotonic_ms(t->real.payload);
}

static int64_t w_wall(void *p)
{
    struct tplat *t = p;

    return t->fake_clock ? t->wall_s : t->real.wall_clock_s(t->real.payload);
}

static int w_open(void *p, mf_platform_file **f, const char *name, int mode)
{
    struct tplat *t = p;

    *f = NULL;
    return tick(t) ? MF_E_IO : t->real.open(t->real.payload, f, name, mode);
}

static int w_read_at(void *p, size_t *n, mf_platform_file *f, uint64_t off, void *buf, size_t len)
{
    struct tplat *t = p;

    *n = 0;
    return tick(t) ? MF_E_IO : t->real.read_at(t->real.payload, n, f, off, buf, len);
}

static int w_write(void *p, mf_platform_file *f, const void *buf, size_t len)
{
    struct tplat *t = p;

    if (tick(t)) {
        /* A torn write: half the bytes reach the file before the "power cut". */
        (void)t->real.write(t->real.payload, f, buf, len / 2);
        return MF_E_IO;
    }
    return t->real.write(t->real.payload, f, buf, len);
}

static int w_sync(void *p, mf_platform_file *f)
{
    struct tplat *t = p;

    return tick(t) ? MF_E_IO : t->real.sync(t->real.payload, f);
}

static void w_close(void *p, mf_platform_file *f)
{
    struct tplat *t = p;

    t->real.close(t->real.payload, f);
}

static int w_size(void *p, uint64_t *size, const char *name)
{
    struct tplat *t = p;

    *size = 0;
    return tick(t) ? MF_E_IO : t->real.size(t->real.payload, size, name);
}

static int w_rename(void *p, const char *from, const char *to)
{
    struct tplat *t = p;

    return tick(t) ? MF_E_IO : t->real.rename(t->real.payload, from, to);
}

static int w_remove(void *p, const char *name)
{
    struct tplat *t = p;

    return tick(t) ? MF_E_IO : t->real.remove(t->real.payload, name);
}

static int w_mkdir(void *p, const char *name)
{
    struct tplat *t = p;

    return tick(t) ? MF_E_IO : t->real.mkdir(t->real.payload, name);
}

static void wrap(struct tplat *t)
{
    static const mf_platform_ops w = {
        .version = MF_PLATFORM_OPS_VERSION,
        .random = w_random,
        .monotonic_ms = w_mono,
        .wall_clock_s = w_wall,
        .open = w_open,
        .read_at = w_read_at,
        .write = w_write,
        .sync = w_sync,
        .close = w_close,
        .size = w_size,
        .rename = w_rename,
        .remove = w_remove,
        .mkdir = w_mkdir,
    };

    assert_int_equal(mf_platform_posix_init(&t->real, &t->posix, t->dir), MF_OK);
    t->ops = w;
    t->ops.payload = t;
    t->io_calls = 0;
    t->fail_at = -1;
}

void tplat_init(struct tplat *t)
{
    memset(t, 0, sizeof(*t));
    mf_kit_fs_mkdtemp(t->dir, sizeof(t->dir), "mf-offload");
    wrap(t);
}

void tplat_reopen(struct tplat *t)
{
    mf_platform_posix_close(&t->posix);
    wrap(t);
}

void tplat_done(struct tplat *t)
{
    mf_platform_posix_close(&t->posix);
    mf_kit_fs_rmtree(t->dir);
}

void tplat_path(const struct tplat *t, char *out, size_t cap, const char *name)
{
    (void)snprintf(out, cap, "%s/%s", t->dir, name);
}
