/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Example: run the int8 student the way a device does. Loads a student .safetensors (from
 * bench_student --out or the distillation trainer) and an IDX test set, classifies every
 * image with mf_student_predict() (no allocation per image), and prints accuracy and the
 * share of images it would offload at a confidence threshold (max-softmax < threshold).
 * Usage: mf-example-classify [--logits OUT.f32] STUDENT.safetensors [THRESHOLD]
 *                            [IMAGES.idx LABELS.idx]
 *        (default set: Fashion-MNIST t10k from Debian's dataset-fashion-mnist); --logits
 *        also writes every image's logits (raw little-endian float32, n x classes), which
 *        integration_torch_trainer compares with the PyTorch trainer's int8 reference.
 */
#include "mf_confidence.h"
#include "mf_cli.h"
#include "mf_ctx.h"
#include "mf_dataset.h"
#include "mf_student_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "NAME\n"
    "    mf-example-classify - run the int8 student as a device does; accuracy and offloads\n"
    "SYNOPSIS\n"
    "    mf-example-classify [--logits OUT.f32] STUDENT.safetensors [THRESHOLD]\n"
    "                        [IMAGES.idx LABELS.idx]\n"
    "    mf-example-classify --help | --version\n"
    "DESCRIPTION\n"
    "    Classifies every image (default: Fashion-MNIST t10k from Debian) and prints the\n"
    "    accuracy and the share offloaded at max-softmax < THRESHOLD (default 0).\n"
    "    --logits OUT.f32 also writes each image's logits (float32, little-endian).\n";

int main(int argc, char **argv)
{
    struct mf_ctx ctx;
    mf_student_model *m = NULL;
    mf_dataset *ds = NULL;
    float threshold = 0.0f;
    size_t ok = 0, offloaded = 0;
    char *end = NULL;
    FILE *logits_file = NULL;
    const char *logits_path = NULL;
    int err;

    if (mf_cli__std_flags(argc, argv, "mf-example-classify", usage) == 0)
        return 0;
    if (argc > 2 && strcmp(argv[1], "--logits") == 0) {
        logits_path = argv[2];
        argv += 2;
        argc -= 2;
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            (void)fprintf(stderr, "mf-example-classify: unknown option \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (argc > 2)
        threshold = strtof(argv[2], &end);
    if (argc < 2 || argc == 4 || argc > 5 || (end && (end == argv[2] || *end))) {
        (void)fputs(usage, stderr);
        return 2;
    }
    mf_ctx__init(&ctx, NULL, NULL, NULL, "example");
    err = mf_student_model_load(&m, &ctx, NULL, argv[1]);
    if (err == MF_OK)
        err = argc > 4 ? mf_dataset_load_idx(&ds, &ctx, NULL, argv[3], argv[4])
                       : mf_dataset_load_fashion(&ds, &ctx, NULL, NULL, "t10k");
    if (err == MF_OK && ds->dim != m->net.n_in)
        err = mf_fail(&ctx, MF_E_INVALID, "images have %u pixels, the student takes %u", ds->dim,
                      m->net.n_in);
    if (err == MF_OK && logits_path && !(logits_file = fopen(logits_path, "wb")))
        err = mf_fail(&ctx, MF_E_IO, "cannot create %s", logits_path);
    if (err < 0) {
        (void)fprintf(stderr, "%s: %s (%s)\n", argv[0], ctx.errmsg, mf_strerror(err));
        mf_student_model_free(m);
        mf_dataset_free(ds);
        return 1;
    }
    for (size_t i = 0; i < ds->n; i++) {
        float logits[MF_STUDENT_MAX_OUT];
        const uint32_t cls = mf_student_predict(&m->net, ds->x + i * ds->dim, logits);
        const float score =
            mf_score(MF_SCORE_MAX_SOFTMAX, logits, m->net.n_out, m->net.temperature);
        ok += cls == ds->y[i];
        if (logits_file && fwrite(logits, sizeof(float), m->net.n_out, logits_file) != m->net.n_out)
            err = MF_E_IO;
        offloaded += score < threshold;
    }
    if (logits_file && fclose(logits_file) != 0)
        err = MF_E_IO;
    if (err < 0) {
        (void)fprintf(stderr, "%s: cannot write %s\n", argv[0], logits_path);
        mf_student_model_free(m);
        mf_dataset_free(ds);
        return 1;
    }
    printf("%zu images: student accuracy %.2f %%, offload at max-softmax < %.3f: %.2f %%\n", ds->n,
           100.0 * (double)ok / (double)ds->n, (double)threshold,
           100.0 * (double)offloaded / (double)ds->n);
    mf_student_model_free(m);
    mf_dataset_free(ds);
    return 0;
}
