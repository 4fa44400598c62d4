/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl in-process with captured output (mfctl_fixture.h). */
#define _XOPEN_SOURCE 700 /* open_memstream */
#include "mf_test.h"
#include "mfctl_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mfctl_run(struct mfctl_run *r, int argc, const char *const *argv_in)
{
    char *argv[40];
    FILE *out, *err;

    assert_true(argc < 40);
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)(uintptr_t)argv_in[i]; /* mfctl reorders positional args in place */
    argv[argc] = NULL;
    memset(r, 0, sizeof(*r));
    out = open_memstream(&r->out, &r->out_len);
    err = open_memstream(&r->err, &r->err_len);
    assert_true(out && err);
    r->rc = mfctl__main(argc, argv, out, err);
    (void)fclose(out);
    (void)fclose(err);
}

void mfctl_run_free(struct mfctl_run *r)
{
    free(r->out); /* open_memstream memory comes from libc */
    free(r->err);
    r->out = r->err = NULL;
}

void mfctl_expect(int rc, const char *err_has, int argc, const char *const *argv)
{
    struct mfctl_run r;

    mfctl_run(&r, argc, argv);
    if (r.rc != rc)
        fail_msg("mfctl %s: exit %d, want %d: %s", argc > 1 ? argv[1] : "", r.rc, rc, r.err);
    if (err_has && !strstr(r.err, err_has))
        fail_msg("mfctl %s: stderr lacks \"%s\": %s", argc > 1 ? argv[1] : "", err_has, r.err);
    mfctl_run_free(&r);
}

void mfctl_capture(struct mfctl_capture *k)
{
    memset(k, 0, sizeof(*k));
    mf_ctx__init(&k->c.ctx, NULL, NULL, NULL, "test");
    k->c.out = open_memstream(&k->text, &k->len);
    assert_non_null(k->c.out);
}

char *mfctl_print_with(int (*print)(struct mfctl *, const char *, size_t), const char *json,
                       int expect)
{
    struct mfctl_capture k;

    mfctl_capture(&k);
    assert_int_equal(print(&k.c, json, strlen(json)), expect);
    (void)fclose(k.c.out);
    return k.text;
}

void mfctl_text_has(const char *text, int n, const char *const *has)
{
    assert_non_null(text);
    for (int i = 0; i < n; i++) {
        if (!strstr(text, has[i]))
            fail_msg("output lacks \"%s\":\n%s", has[i], text);
    }
}
