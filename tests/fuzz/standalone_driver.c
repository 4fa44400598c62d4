/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs a libFuzzer target (LLVMFuzzerTestOneInput) over every file of its corpus with a
 * plain C compiler, so the corpora are regression tests under ctest and the sanitizer job.
 * Usage: <target>_regress FILE_OR_DIR...   Exits non-zero if no input was run.
 * Real fuzzing: build the same <target>_fuzzer.c with clang -fsanitize=fuzzer
 * (scripts/fuzz).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    if (!f) {
        (void)fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        (void)fclose(f);
        return -1;
    }
    /* malloc of the exact size (not size+slack) lets ASan catch reads past the input. */
    buf = malloc(n ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        (void)fclose(f);
        return -1;
    }
    (void)fclose(f);
    (void)LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 1;
}

static int run_path(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int count = 0;

    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    d = opendir(path);
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char child[4096];
        int r;

        if (e->d_name[0] == '.')
            continue;
        if (snprintf(child, sizeof(child), "%s/%s", path, e->d_name) >= (int)sizeof(child))
            continue;
        r = run_path(child);
        if (r < 0) {
            (void)closedir(d);
            return -1;
        }
        count += r;
    }
    (void)closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    int total = 0;

    for (int i = 1; i < argc; i++) {
        int r = run_path(argv[i]);

        if (r < 0) {
            (void)fprintf(stderr, "failed on %s\n", argv[i]);
            return 1;
        }
        total += r;
    }
    printf("%d inputs run\n", total);
    return total > 0 ? 0 : 1;
}
