/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A power-cut port for tests: an in-memory file system behind struct mf_platform_ops that
 * counts the storage calls that change storage and, at a chosen call, loses power. From
 * then on every storage op fails with MF_E_IO; powercut_reboot() then replaces what the
 * code saw with what was durable (see powercut_fixture.c for the model), and storage works
 * again for the next agent on the same "disk".
 */
#ifndef MF_POWERCUT_FIXTURE_H
#define MF_POWERCUT_FIXTURE_H

#include "mf/sys/platform.h"

#include <stddef.h>
#include <stdint.h>

/* What a file's unsynced bytes become at the cut. */
enum powercut_keep {
    POWERCUT_KEEP_NONE,  /* nothing unsynced survives: the content of the last sync */
    POWERCUT_KEEP_PREFIX /* a random prefix of what was written since (none to all) */
};

struct powercut;

/* A fresh, empty disk; `seed` drives POWERCUT_KEEP_PREFIX. Asserts on failure. */
struct powercut *powercut_new(enum powercut_keep keep, uint64_t seed);
void powercut_free(struct powercut *pc);
/* A copy of the disk (live and durable, counter included; no file may be open), with its
 * own unsynced-data model and seed. */
struct powercut *powercut_clone(const struct powercut *pc, enum powercut_keep keep, uint64_t seed);
/* The port (payload included); valid as long as `pc`. */
const mf_platform_ops *powercut_ops(struct powercut *pc);
/* Loses power at the `n`th storage call from now (0: the next one); -1: never. */
void powercut_arm(struct powercut *pc, long n);
/* Storage calls that change storage (open for writing, write, sync, truncate, rename,
 * remove, mkdir) since powercut_new(). */
long powercut_calls(const struct powercut *pc);
/* 1 once power was lost (until powercut_reboot()). */
int powercut_is_down(const struct powercut *pc);
/* Power comes back: the disk holds exactly what was durable at the cut. Every handle of
 * the old run is invalid; the counter keeps counting. */
void powercut_reboot(struct powercut *pc);
/* A copy of `name`'s live content (test_malloc'd; NULL when missing). */
uint8_t *powercut_read(struct powercut *pc, const char *name, size_t *len_out);

#endif /* MF_POWERCUT_FIXTURE_H */
