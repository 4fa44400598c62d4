/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf-train-teacher: trains the example family's float teacher with the project's own
 * trainer and writes it as the safetensors file the builtin teacher connector serves
 * (docs/distill.md). The file is a cache keyed by data and recipe: run again with the same
 * inputs and it is loaded, not retrained.
 * Usage: mf-train-teacher --train-images F --train-labels F --out PATH
 *                         [--hidden 512,256] [--epochs 15] [--test-images F --test-labels F]
 */
#include "mf_cli.h"
#include "mf_ctx.h"
#include "mf_distill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES (MF_MLP_MAX_LAYERS + 1)

struct args {
    const char *images, *labels, *out, *test_images, *test_labels, *hidden;
    unsigned long epochs;
};

static const char usage_text[] =
    "NAME\n"
    "    mf-train-teacher - train the example family's float teacher (docs/distill.md)\n"
    "SYNOPSIS\n"
    "    mf-train-teacher --train-images F --train-labels F --out PATH\n"
    "                     [--hidden 512,256] [--epochs 15] [--test-images F --test-labels F]\n"
    "    mf-train-teacher --help | --version\n"
    "DESCRIPTION\n"
    "    Trains an MLP on the IDX images and labels and writes it as the safetensors file\n"
    "    the builtin teacher connector serves. PATH is a cache keyed by data and recipe: run\n"
    "    again with the same inputs and it is loaded, not retrained.\n"
    "OPTIONS\n"
    "    --hidden N,N...     hidden layer widths, each 1..4096 (default 512,256)\n"
    "    --epochs N          1..1000 (default 15)\n"
    "    --test-images F --test-labels F   print the accuracy on a test set\n"
    "EXIT STATUS\n"
    "    0 success; 1 failure (message on stderr); 2 bad usage.\n";

static int usage(void)
{
    (void)fputs("Run `mf-train-teacher --help` for the options.\n", stderr);
    return 2;
}

static int bad(const char *why, const char *what)
{
    (void)fprintf(stderr, "mf-train-teacher: %s%s\n", why, what);
    return -1;
}

static int parse(struct args *a, int argc, char **argv)
{
    const char *epochs = "15";
    char *end = NULL;
    const struct {
        const char *flag;
        const char **value;
    } flags[] = {
        {"--train-images", &a->images},
        {"--train-labels", &a->labels},
        {"--out", &a->out},
        {"--test-images", &a->test_images},
        {"--test-labels", &a->test_labels},
        {"--hidden", &a->hidden},
        {"--epochs", &epochs},
    };

    memset(a, 0, sizeof(*a));
    a->hidden = "512,256";
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t f = 0;

        while (f < sizeof(flags) / sizeof(flags[0]) && strcmp(k, flags[f].flag) != 0)
            f++;
        if (f == sizeof(flags) / sizeof(flags[0]))
            return bad("unknown option ", k);
        if (!v)
            return bad("option needs a value: ", k);
        *flags[f].value = v;
    }
    a->epochs = epochs[0] >= '0' && epochs[0] <= '9' ? strtoul(epochs, &end, 10) : 0;
    if (!end || *end || a->epochs == 0 || a->epochs > 1000)
        return bad("--epochs must be an integer in 1..1000, not ", epochs);
    if (!a->images || !a->labels || !a->out)
        return bad("--train-images, --train-labels and --out are required", "");
    return !a->test_images == !a->test_labels
               ? 0
               : bad("--test-images and --test-labels go together", "");
}

/* "512,256" -> sizes {dim, 512, 256, 10}. */
static int parse_sizes(uint32_t *sizes, uint32_t *n, uint32_t dim, const char *hidden)
{
    const char *p = hidden;

    *n = 0;
    sizes[(*n)++] = dim;
    while (*p) {
        char *end;
        unsigned long h = strtoul(p, &end, 10);

        if (end == p || h == 0 || h > 4096 || *n + 1 >= MAX_SIZES)
            return -1;
        sizes[(*n)++] = (uint32_t)h;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    sizes[(*n)++] = MF_DATASET_CLASSES;
    return 0;
}

int main(int argc, char **argv)
{
    struct mf_ctx ctx;
    struct args a;
    mf_dataset *train = NULL, *test = NULL;
    mf_mlp *t = NULL;
    mf_train_options o;
    uint32_t sizes[MAX_SIZES], n = 0;
    int trained = 0, err;

    if (mf_cli__std_flags(argc, argv, "mf-train-teacher", usage_text) == 0)
        return 0;
    if (parse(&a, argc, argv) < 0)
        return usage();
    mf_ctx__init(&ctx, mf_allocator_default(), NULL, NULL, "teacher");
    err = mf_dataset_load_idx(&train, &ctx, &ctx.alloc, a.images, a.labels);
    if (err == MF_OK && parse_sizes(sizes, &n, train->dim, a.hidden) < 0) {
        mf_dataset_free(train);
        (void)bad("--hidden must be widths 1..4096 separated by commas, not ", a.hidden);
        return usage();
    }
    if (err == MF_OK)
        err = mf_train_options_init(&o, MF_TRAIN_OPTIONS_VERSION);
    o.epochs = (uint32_t)a.epochs;
    o.batch = 128;
    o.lr = 1e-3f;
    o.lr_final = 5e-5f;
    o.seed = 2024;
    if (err == MF_OK)
        err = mf_teacher_load_or_train(&t, &trained, &ctx, train, sizes, n, &o, a.out);
    if (err == MF_OK && a.test_images)
        err = mf_dataset_load_idx(&test, &ctx, &ctx.alloc, a.test_images, a.test_labels);
    if (err == MF_OK && test) {
        float *logits = mf_calloc(&ctx.alloc, test->n, MF_DATASET_CLASSES * sizeof(float));
        uint8_t *pred = mf_alloc(&ctx.alloc, test->n);

        err = logits && pred ? mf_mlp_logits(logits, &ctx, t, test->x, test->n, 2) : MF_E_NOMEM;
        if (err == MF_OK) {
            mf_eval_argmax(pred, logits, test->n, MF_DATASET_CLASSES);
            (void)printf("teacher accuracy on %zu test items: %.2f %%\n", test->n,
                         100.0 * mf_eval_accuracy(pred, test->y, test->n));
        }
        mf_free(&ctx.alloc, logits);
        mf_free(&ctx.alloc, pred);
    }
    if (err == MF_OK)
        (void)printf("teacher %s: %s\n", trained ? "trained" : "loaded (cached)", a.out);
    else
        (void)fprintf(stderr, "mf-train-teacher: %s\n", mf_ctx__errmsg(&ctx));
    mf_mlp_free(t);
    mf_dataset_free(train);
    mf_dataset_free(test);
    return err == MF_OK ? 0 : 1;
}
