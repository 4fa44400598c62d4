/* SPDX-License-Identifier: Apache-2.0 */
/* Running mfctl in-process for the mfctl tests: its exit code, stdout and stderr captured. */
#ifndef MF_MFCTL_FIXTURE_H
#define MF_MFCTL_FIXTURE_H

#include "mfctl.h"

#include <stddef.h>

struct mfctl_run {
    int rc;
    char *out, *err; /* NUL-terminated; libc memory (open_memstream) */
    size_t out_len, err_len;
};

/* Runs mfctl with `argv` (argv[0] is the program name; it need not be NULL-terminated). */
void mfctl_run(struct mfctl_run *r, int argc, const char *const *argv);
/* Frees what a run captured; a zeroed run is fine. */
void mfctl_run_free(struct mfctl_run *r);

#define MFCTL_RUN(r, ...)                                                                          \
    do {                                                                                           \
        const char *args_[] = {"mfctl", __VA_ARGS__};                                              \
        mfctl_run((r), (int)(sizeof(args_) / sizeof(args_[0])), args_);                            \
    } while (0)

/* Runs mfctl with `argv` and fails the case unless it exits `rc` with `err_has` (unless NULL)
 * in its stderr. */
void mfctl_expect(int rc, const char *err_has, int argc, const char *const *argv);

#define MFCTL_EXPECT(rc, err_has, ...)                                                             \
    do {                                                                                           \
        const char *args_[] = {"mfctl", __VA_ARGS__};                                              \
        mfctl_expect((rc), (err_has), (int)(sizeof(args_) / sizeof(args_[0])), args_);             \
    } while (0)

/* A zeroed mfctl whose output goes to `text` (free() it after fclose(c.out)). */
struct mfctl_capture {
    struct mfctl c;
    char *text;
    size_t len;
};

void mfctl_capture(struct mfctl_capture *k);
/* What `print` writes for `json` (it must return `expect`); free() the text. */
char *mfctl_print_with(int (*print)(struct mfctl *, const char *, size_t), const char *json,
                       int expect);

/* Fails naming the first of the `n` strings `has` that `text` lacks, and the text. */
void mfctl_text_has(const char *text, int n, const char *const *has);

#define MFCTL_TEXT_HAS(text, ...)                                                                  \
    do {                                                                                           \
        const char *const has_[] = {__VA_ARGS__};                                                  \
        mfctl_text_has((text), (int)(sizeof(has_) / sizeof(has_[0])), has_);                       \
    } while (0)

#endif /* MF_MFCTL_FIXTURE_H */
