/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Example: ground truth for the samples a fleet uplinked. The server never knows true
 * labels; the example's devices stream a known dataset, so each sample of an export
 * (`mfctl samples export`, docs/offload.md) is matched by its input bytes to the dataset
 * image it came from. Prints JSON: per kind (hard / audit) and model version, how many
 * samples, how many matched and were labelled, and the teacher's and the student's
 * accuracy on them ("teacher accuracy on the audit slice" of the README's loop).
 * Usage: mf-example-sample-check EXPORT_DIR (--images IDX --labels IDX | --digits CSV)
 */
#include "mf_cli.h"
#include "mf_ctx.h"
#include "mf_dynbuf.h"
#include "mf_sample_check.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "NAME\n"
    "    mf-example-sample-check - check exported samples against the data set's labels\n"
    "SYNOPSIS\n"
    "    mf-example-sample-check EXPORT_DIR (--images IDX --labels IDX | --digits CSV)\n"
    "    mf-example-sample-check --help | --version\n";

int main(int argc, char **argv)
{
    static mf_sample_tally tally; /* 64 groups: not on the stack */
    const char *images = NULL, *labels = NULL, *digits = NULL;
    mf_label_index *ix = NULL;
    mf_dataset *ds = NULL;
    struct mf_dynbuf out;
    struct mf_ctx ctx;
    int err;

    if (mf_cli__std_flags(argc, argv, "mf-example-sample-check", usage) == 0)
        return 0;
    if (argc > 1 && argv[1][0] == '-') {
        (void)fprintf(stderr, "mf-example-sample-check: unknown option \"%s\"\n", argv[1]);
        argc = 0; /* usage below */
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--images") == 0)
            images = argv[i + 1];
        else if (strcmp(argv[i], "--labels") == 0)
            labels = argv[i + 1];
        else if (strcmp(argv[i], "--digits") == 0)
            digits = argv[i + 1];
        else {
            (void)fprintf(stderr, "mf-example-sample-check: unknown option \"%s\"\n", argv[i]);
            argc = 0; /* usage below */
        }
    }
    if (argc < 4 || argc % 2 || !(digits || (images && labels))) {
        (void)fputs(usage, stderr);
        return 2;
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "sample-check");
    mf_dynbuf__init(&out, NULL, 1u << 20);
    err = digits ? mf_dataset_load_digits(&ds, &ctx, NULL, digits)
                 : mf_dataset_load_idx(&ds, &ctx, NULL, images, labels);
    if (err == MF_OK)
        err = mf_label_index_new(&ix, &ctx, ds);
    if (err == MF_OK)
        err = mf_sample_check_export(&tally, &ctx, ix, argv[1]);
    if (err == MF_OK)
        err = mf_sample_tally_json(&out, &tally);
    if (err == MF_OK)
        (void)fputs((const char *)out.data, stdout);
    else
        (void)fprintf(stderr, "mf-example-sample-check: %s (%s)\n", mf_ctx__errmsg(&ctx),
                      mf_strerror(err));
    mf_dynbuf__free(&out);
    mf_label_index_free(ix);
    mf_dataset_free(ds);
    return err == MF_OK ? 0 : 1;
}
