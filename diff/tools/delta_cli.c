/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File adapters around the engine. `patch` streams: the old image is read with pread()
 * through the source callback, the patch is fed in mf_patch_out_size() chunks and the new
 * image written as it is produced, so its peak memory is the apply workspace plus two
 * 64 KiB buffers whatever the model size. `diff` and BSDIFF40 apply load whole files.
 */
#define _XOPEN_SOURCE 700
#include "delta_cli.h"
#include "mf/error.h"
#include "mf/alloc.h"
#include "mf/diff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(const char *msg)
{
    (void)fprintf(stderr, "%s\n", msg);
    return 2;
}

/* Reads a whole file through the libc allocator; NULL on failure (message printed). */
static uint8_t *load(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    uint8_t *buf;

    if (!f || fstat(fileno(f), &st) != 0) {
        (void)fprintf(stderr, "%s: %s\n", path, strerror(errno));
        if (f)
            (void)fclose(f);
        return NULL;
    }
    *len = (size_t)st.st_size;
    buf = mf_alloc(NULL, *len ? *len : 1);
    if (!buf || fread(buf, 1, *len, f) != *len) {
        (void)fprintf(stderr, "%s: read failed\n", path);
        mf_free(NULL, buf);
        buf = NULL;
    }
    (void)fclose(f);
    return buf;
}

static int save(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;

    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        (void)fprintf(stderr, "%s: write failed\n", path);
    return ok ? 0 : 1;
}

static int parse_format(const char *s, mf_diff_format *out)
{
    if (strcmp(s, "mf") == 0)
        *out = MF_DIFF_FORMAT_MF;
    else if (strcmp(s, "bsdiff40") == 0)
        *out = MF_DIFF_FORMAT_BSDIFF40;
    else
        return -1;
    return 0;
}

static int parse_uint(const char *s, unsigned long long *out)
{
    char *end;

    errno = 0;
    *out = strtoull(s, &end, 10);
    return (errno || *end || end == s) ? -1 : 0;
}

int mf_delta_cli_diff(int argc, char **argv)
{
    mf_diff_options o;
    const char *pos[3];
    int np = 0, rc = 1;
    uint8_t *old = NULL, *nw = NULL, *patch = NULL;
    size_t old_len = 0, new_len = 0, patch_len = 0;
    mf_diff *d = NULL;

    if (mf_diff_options_init(&o, MF_DIFF_OPTIONS_VERSION) < 0)
        return 1;
    for (int i = 0; i < argc; i++) {
        unsigned long long v;

        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (parse_format(argv[++i], &o.format) < 0)
                return usage("--format must be mf or bsdiff40");
        } else if ((strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--level") == 0 ||
                    strcmp(argv[i], "--window") == 0) &&
                   i + 1 < argc) {
            if (parse_uint(argv[i + 1], &v) < 0 || v > (1ull << 30))
                return usage("bad number");
            if (argv[i][2] == 't')
                o.threads = (unsigned int)v;
            else if (argv[i][2] == 'l')
                o.level = (int)v;
            else
                o.max_window = (size_t)v;
            i++;
        } else if (np < 3) {
            pos[np++] = argv[i];
        } else {
            return usage("usage: diff [--format mf|bsdiff40] [--threads N] [--level L] "
                         "[--window BYTES] OLD NEW PATCH");
        }
    }
    if (np != 3)
        return usage("usage: diff [--format mf|bsdiff40] [--threads N] [--level L] "
                     "[--window BYTES] OLD NEW PATCH");
    old = load(pos[0], &old_len);
    nw = old ? load(pos[1], &new_len) : NULL;
    if (!nw)
        goto out;
    if (mf_diff_new(&d, &o, NULL) < 0) {
        (void)fprintf(stderr, "diff: bad options\n");
        goto out;
    }
    if (mf_diff_create(&patch, &patch_len, d, old, old_len, nw, new_len) < 0) {
        (void)fprintf(stderr, "diff: %s\n", mf_diff_errmsg(d));
        goto out;
    }
    rc = save(pos[2], patch, patch_len);
out:
    mf_free(NULL, patch);
    mf_free(NULL, old);
    mf_free(NULL, nw);
    mf_diff_free(d);
    return rc;
}

static int pread_source(void *payload, uint64_t offset, void *buf, size_t len)
{
    int fd = *(const int *)payload;
    size_t done = 0;

    while (done < len) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(offset + done));

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return MF_E_IO;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (int)done;
}

/* Streams an mf patch from `pf` into `nf`; the old image is read from `old_fd`. */
static int stream_apply(int old_fd, FILE *pf, FILE *nf, size_t window)
{
    mf_patch_options o;
    mf_patch *p = NULL;
    uint8_t *ibuf = NULL, *obuf = NULL;
    size_t chunk = mf_patch_out_size();
    struct stat st;
    mf_inbuf in = {NULL, 0, 0};
    int r = MF_AGAIN, rc = 1;

    if (mf_patch_options_init(&o, MF_PATCH_OPTIONS_VERSION) < 0 || fstat(old_fd, &st) != 0)
        return 1;
    o.source_read = pread_source;
    o.source_payload = &old_fd;
    o.source_size = (uint64_t)st.st_size;
    if (window)
        o.max_window = window;
    ibuf = mf_alloc(NULL, chunk);
    obuf = mf_alloc(NULL, chunk);
    if (!ibuf || !obuf || mf_patch_new(&p, &o, NULL) < 0)
        goto out;
    in.src = ibuf;
    while (r == MF_AGAIN) {
        mf_outbuf out = {obuf, chunk, 0};

        if (in.pos == in.size) {
            in.size = fread(ibuf, 1, chunk, pf);
            in.pos = 0;
        }
        r = mf_patch_apply(p, &out, &in);
        if (out.pos && fwrite(obuf, 1, out.pos, nf) != out.pos) {
            (void)fprintf(stderr, "patch: write failed\n");
            goto out;
        }
        if (r == MF_AGAIN && in.size == 0 && out.pos == 0) {
            (void)fprintf(stderr, "patch: truncated patch\n");
            goto out;
        }
    }
    if (r < 0)
        (void)fprintf(stderr, "patch: %s (%s)\n", mf_patch_errmsg(p), mf_strerror(r));
    else
        rc = 0;
out:
    mf_patch_free(p);
    mf_free(NULL, ibuf);
    mf_free(NULL, obuf);
    return rc;
}

static int apply_bsdiff40(const char *old_path, const char *patch_path, const char *new_path)
{
    uint8_t *old = NULL, *patch = NULL, *nw = NULL;
    size_t old_len = 0, patch_len = 0, new_len = 0;
    mf_diff *d = NULL;
    int rc = 1;

    old = load(old_path, &old_len);
    patch = old ? load(patch_path, &patch_len) : NULL;
    if (!patch || mf_diff_new(&d, NULL, NULL) < 0)
        goto out;
    if (mf_diff_bsdiff40_apply(&nw, &new_len, d, old, old_len, patch, patch_len) < 0) {
        (void)fprintf(stderr, "patch: %s\n", mf_diff_errmsg(d));
        goto out;
    }
    rc = save(new_path, nw, new_len);
out:
    mf_free(NULL, old);
    mf_free(NULL, patch);
    mf_free(NULL, nw);
    mf_diff_free(d);
    return rc;
}

int mf_delta_cli_patch(int argc, char **argv)
{
    const char *pos[3];
    int np = 0, fmt = -1, rc = 1, old_fd;
    size_t window = 0;
    char magic[8] = {0};
    FILE *pf, *nf;

    for (int i = 0; i < argc; i++) {
        mf_diff_format f;

        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (parse_format(argv[++i], &f) < 0)
                return usage("--format must be mf or bsdiff40");
            fmt = (int)f;
        } else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            unsigned long long v;

            if (parse_uint(argv[++i], &v) < 0 || v > (1ull << 30))
                return usage("bad --window");
            window = (size_t)v;
        } else if (np < 3) {
            pos[np++] = argv[i];
        } else {
            return usage("usage: patch [--format mf|bsdiff40] [--window BYTES] OLD PATCH NEW");
        }
    }
    if (np != 3)
        return usage("usage: patch [--format mf|bsdiff40] [--window BYTES] OLD PATCH NEW");
    pf = fopen(pos[1], "rb");
    if (!pf) {
        (void)fprintf(stderr, "%s: %s\n", pos[1], strerror(errno));
        return 1;
    }
    if (fmt < 0) {
        fmt = (fread(magic, 1, 8, pf) == 8 && memcmp(magic, "BSDIFF40", 8) == 0)
                  ? MF_DIFF_FORMAT_BSDIFF40
                  : MF_DIFF_FORMAT_MF;
        rewind(pf);
    }
    if (fmt == MF_DIFF_FORMAT_BSDIFF40) {
        (void)fclose(pf);
        return apply_bsdiff40(pos[0], pos[1], pos[2]);
    }
    old_fd = open(pos[0], O_RDONLY);
    nf = fopen(pos[2], "wb");
    if (old_fd < 0 || !nf)
        (void)fprintf(stderr, "cannot open %s or %s\n", pos[0], pos[2]);
    else
        rc = stream_apply(old_fd, pf, nf, window);
    if (nf && fclose(nf) != 0)
        rc = 1;
    if (old_fd >= 0)
        (void)close(old_fd);
    (void)fclose(pf);
    return rc;
}

static int print_block(void *payload, const mf_diff_block_info *b)
{
    (void)payload;
    printf("block %5u  %-7s%s w%u  new %12llu +%-8u payload %-8u old %llu\n", (unsigned)b->index,
           b->kind, b->sparse ? "/sparse" : (b->raw ? "/raw" : ""), b->word,
           (unsigned long long)b->new_offset, (unsigned)b->new_len, (unsigned)b->payload_len,
           (unsigned long long)b->old_offset);
    return 0;
}

static void print_hex(const char *label, const uint8_t *p)
{
    printf("%s", label);
    for (int i = 0; i < 32; i++)
        printf("%02x", p[i]);
    printf("\n");
}

int mf_delta_cli_info(int argc, char **argv)
{
    uint8_t *patch;
    size_t len = 0;
    mf_diff_header_info h;
    mf_diff *d = NULL;
    int rc = 1;

    if (argc != 1)
        return usage("usage: info PATCH");
    patch = load(argv[0], &len);
    if (!patch || mf_diff_new(&d, NULL, NULL) < 0)
        goto out;
    if (len >= 8 && memcmp(patch, "BSDIFF40", 8) == 0) {
        printf("format BSDIFF40 (bsdiff 4.3), %zu bytes\n", len);
        rc = 0;
        goto out;
    }
    if (mf_diff_describe(&h, d, patch, len, print_block, NULL) < 0) {
        (void)fprintf(stderr, "info: %s\n", mf_diff_errmsg(d));
        goto out;
    }
    printf("format mf delta v%u, %zu bytes, window %u, %u blocks\nold %llu bytes\nnew %llu "
           "bytes\n",
           h.format_version, len, (unsigned)h.window, (unsigned)h.block_count,
           (unsigned long long)h.old_size, (unsigned long long)h.new_size);
    print_hex("old sha256 ", h.old_sha256);
    print_hex("new sha256 ", h.new_sha256);
    rc = 0;
out:
    mf_free(NULL, patch);
    mf_diff_free(d);
    return rc;
}
