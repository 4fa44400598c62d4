/* SPDX-License-Identifier: Apache-2.0 */
/* Preamble of every cmocka test binary: cmocka's required includes, then the public API. */
#ifndef MF_TEST_H
#define MF_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "mf.h"

/*
 * A case that cannot run on this machine (a tool or data set missing) skips with a reason.
 * cmocka counts a skip as a pass, so with MF_TEST_NO_SKIP set (.ci/run sets it) the skip
 * fails the case instead: in CI every dependency is installed by scripts/install-deps, and a
 * case that did not run must not look green there.
 */
#define MF_SKIP(why)                                                                               \
    do {                                                                                           \
        if (getenv("MF_TEST_NO_SKIP"))                                                             \
            fail_msg("case cannot run here: %s (MF_TEST_NO_SKIP is set)", why);                    \
        skip();                                                                                    \
    } while (0)

/*
 * Runs `tests` and, when `with_extra` is set, `extra` after them as one group. Cases that apply
 * to one configuration only (a SQLite file, a SQLite trigger) join the runs of that
 * configuration instead of skipping in the others, so a skip always means "could not run".
 */
static inline int mf_test__run_group(const char *name, const struct CMUnitTest *tests,
                                     size_t ntests, const struct CMUnitTest *extra, size_t nextra,
                                     int with_extra, CMFixtureFunction setup,
                                     CMFixtureFunction teardown)
{
    struct CMUnitTest *all = calloc(ntests + nextra, sizeof(*all));
    size_t n = 0;
    int failed;

    if (!all)
        return 1;
    for (size_t i = 0; i < ntests; i++)
        all[n++] = tests[i];
    for (size_t i = 0; with_extra && i < nextra; i++)
        all[n++] = extra[i];
    failed = _cmocka_run_group_tests(name, all, n, setup, teardown);
    free(all);
    return failed;
}

#define MF_TEST_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * One group of cases, named as cmocka prints it: `return MF_TEST_RUN("name", setup, teardown,
 * cmocka_unit_test(a), ...);`. The main() of most binaries is only this, so the array, its
 * count and the call are spelled once here instead of again in every file.
 */
#define MF_TEST_RUN(name, setup, teardown, ...)                                                    \
    _cmocka_run_group_tests(name, (const struct CMUnitTest[]){__VA_ARGS__},                        \
                            MF_TEST_COUNT(((const struct CMUnitTest[]){__VA_ARGS__})), setup,      \
                            teardown)

#endif /* MF_TEST_H */
