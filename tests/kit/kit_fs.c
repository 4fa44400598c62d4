/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch directories (kit_fs.h). */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include "kit_fs.h"
#include "mf_test.h"

#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void mf_kit_fs_mkdtemp(char *out, size_t cap, const char *prefix)
{
    int n = snprintf(out, cap, "/tmp/%s-XXXXXX", prefix);

    assert_true(n > 0 && (size_t)n < cap);
    if (!mkdtemp(out))
        fail_msg("mkdtemp %s failed", out);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void mf_kit_fs_rmtree(const char *dir)
{
    (void)nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

uint8_t *mf_kit_fs_slurp(const char *dir, const char *name, size_t *len)
{
    char path[512];
    uint8_t *buf;
    FILE *f;
    long n;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (!f)
        return NULL;
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    buf = test_malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    (void)fclose(f);
    *len = (size_t)n;
    return buf;
}

int mf_kit_fs_exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

void mf_kit_fs_read_line(char *out, size_t cap, const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s", path);
    assert_non_null(fgets(out, (int)cap, f));
    out[strcspn(out, "\r\n")] = '\0';
    (void)fclose(f);
}

void mf_kit_fs_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    if (!f)
        fail_msg("cannot create %s", path);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

char *mf_kit_fs_source_path(char *out, size_t cap, const char *rel)
{
    if (snprintf(out, cap, "%s/%s", MF_TEST_SOURCE_DIR, rel) >= (int)cap)
        fail_msg("source path of %s too long", rel);
    return out;
}

void mf_kit_fs_flip_byte(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    int c;

    if (!f)
        fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    c = fgetc(f);
    assert_true(c != EOF);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fputc(c ^ 0xff, f), c ^ 0xff);
    assert_int_equal(fclose(f), 0);
}
