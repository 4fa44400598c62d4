/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test fixture shared by the offload test binaries: a fresh state directory on the POSIX
 * port, wrapped so tests can fail the Nth storage call and fake both clocks. The allocator
 * of these tests is the kit's (kit_alloc.h).
 */
#ifndef MF_OFFLOAD_FIXTURE_H
#define MF_OFFLOAD_FIXTURE_H

#include "mf_test.h"
#include "kit_alloc.h"
#include "mf/sys/platform_posix.h"

struct tplat {
    char dir[64];
    mf_platform_posix posix;
    mf_platform_ops real; /* the POSIX port */
    mf_platform_ops ops;  /* wrapped: what the code under test gets */
    long io_calls;        /* storage calls so far */
    long fail_at;         /* fail this storage call (0-based) and every later one; -1: never */
    uint64_t mono_ms;     /* fake monotonic clock when fake_clock is set */
    int64_t wall_s;       /* fake wall clock when fake_clock is set */
    int fake_clock;
};

/* Creates a fresh state dir under /tmp and the wrapped port (no faults, real clocks). */
void tplat_init(struct tplat *t);
/* Reopens the port on the same directory (a "restart"); faults are cleared. */
void tplat_reopen(struct tplat *t);
/* Closes the port and removes the directory. */
void tplat_done(struct tplat *t);
/* Full path of `name` inside the state dir. */
void tplat_path(const struct tplat *t, char *out, size_t cap, const char *name);

#endif /* MF_OFFLOAD_FIXTURE_H */
