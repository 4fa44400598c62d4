/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File adapters around the engine. `patch` streams: the old image is read with pread()
 * through the source callback, the patch is fed in mf_patch_out_size() chunks and the new
 * image written as it is produced, so its peak memory is the apply workspace plus two
 * 64 KiB buffers whatever the model size. `diff` and BSDIFF40 apply load whole files.
 * The new image is written to NEW.part and renamed to NEW only once it is complete and
 * checked: an mf patch checks itself (sha256 of old and new in its header); a BSDIFF40
 * patch has no checksum, so it is applied only against --expect-sha256 (or, explicitly,
 * --unverified). A failed or mismatching apply leaves no NEW behind.
 */
#define _XOPEN_SOURCE 700
#include "delta_cli.h"
#include "mf/error.h"
#include "mf/alloc.h"
#include "mf/diff.h"
#include "mf/patch.h"
#include "mf_hex.h"
#include "mf_sha256.h"

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

/* The new image on its way to NEW: written to NEW.part, hashed as it goes when a digest is
 * expected (an mf patch's own check hashes every output byte already: a second pass here
 * cost a third of `patch`'s time, bench/delta/README.md). */
struct new_file {
    const char *path;
    char *part;
    FILE *f;
    struct mf_sha256 sha;
    const uint8_t *expect; /* sha256 NEW must have, or NULL */
};

static int new_open(struct new_file *o, const char *path, const uint8_t *expect)
{
    size_t n = strlen(path) + sizeof(".part");

    memset(o, 0, sizeof(*o));
    o->path = path;
    o->expect = expect;
    o->part = mf_alloc(NULL, n);
    if (!o->part)
        return 1;
    (void)snprintf(o->part, n, "%s.part", path);
    o->f = fopen(o->part, "wb");
    if (!o->f) {
        (void)fprintf(stderr, "%s: %s\n", o->part, strerror(errno));
        mf_free(NULL, o->part);
        o->part = NULL;
        return 1;
    }
    mf_sha256__init(&o->sha);
    return 0;
}

static int new_write(struct new_file *o, const void *p, size_t n)
{
    if (o->expect)
        mf_sha256__update(&o->sha, p, n);
    if (n && fwrite(p, 1, n, o->f) != n) {
        (void)fprintf(stderr, "%s: write failed\n", o->part);
        return 1;
    }
    return 0;
}

/* Renames NEW.part to NEW when `rc` is 0 and the digest is the expected one; else removes
 * it. Returns the exit status. */
static int new_close(struct new_file *o, int rc)
{
    uint8_t got[MF_SHA256_DIGEST_LEN];
    char hex[2 * MF_SHA256_DIGEST_LEN + 1], want[2 * MF_SHA256_DIGEST_LEN + 1];

    if (!o->part)
        return 1;
    mf_sha256__final(&o->sha, got);
    if (fclose(o->f) != 0 && rc == 0) {
        (void)fprintf(stderr, "%s: write failed\n", o->part);
        rc = 1;
    }
    if (rc == 0 && o->expect && memcmp(got, o->expect, sizeof(got)) != 0) {
        mf_hex__encode(hex, got, sizeof(got));
        mf_hex__encode(want, o->expect, sizeof(got));
        (void)fprintf(stderr,
                      "patch: output sha256 %s does not match --expect-sha256 %s; %s not written\n",
                      hex, want, o->path);
        rc = 1;
    }
    if (rc == 0 && rename(o->part, o->path) != 0) {
        (void)fprintf(stderr, "%s: %s\n", o->path, strerror(errno));
        rc = 1;
    }
    if (rc != 0)
        (void)unlink(o->part);
    mf_free(NULL, o->part);
    return rc;
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
static int stream_apply(int old_fd, FILE *pf, struct new_file *nf, size_t window)
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
        if (new_write(nf, obuf, out.pos) != 0)
            goto out;
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

static int apply_bsdiff40(const char *old_path, const char *patch_path, struct new_file *nf)
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
    rc = new_write(nf, nw, new_len);
out:
    mf_free(NULL, old);
    mf_free(NULL, patch);
    mf_free(NULL, nw);
    mf_diff_free(d);
    return rc;
}

#define PATCH_USAGE                                                                                \
    "usage: patch [--format mf|bsdiff40] [--window BYTES] [--expect-sha256 HEX | --unverified] "   \
    "OLD PATCH NEW"

int mf_delta_cli_patch(int argc, char **argv)
{
    const char *pos[3];
    int np = 0, fmt = -1, rc = 1, old_fd, unverified = 0;
    size_t window = 0;
    char magic[8] = {0};
    uint8_t expect[MF_SHA256_DIGEST_LEN];
    const uint8_t *want = NULL;
    struct new_file nf;
    FILE *pf;

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
        } else if (strcmp(argv[i], "--expect-sha256") == 0 && i + 1 < argc) {
            i++;
            if (mf_hex__decode(expect, sizeof(expect), argv[i], strlen(argv[i])) < 0) {
                (void)fprintf(stderr, "--expect-sha256 '%.80s' is not 64 hex digits\n", argv[i]);
                return 2;
            }
            want = expect;
        } else if (strcmp(argv[i], "--unverified") == 0) {
            unverified = 1;
        } else if (np < 3) {
            pos[np++] = argv[i];
        } else {
            return usage(PATCH_USAGE);
        }
    }
    if (np != 3)
        return usage(PATCH_USAGE);
    if (want && unverified)
        return usage("--expect-sha256 and --unverified exclude each other");
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
    /* Safe default: nothing says a BSDIFF40 output is the right image but a digest. */
    if (fmt == MF_DIFF_FORMAT_BSDIFF40 && !want && !unverified) {
        (void)fclose(pf);
        (void)fprintf(
            stderr,
            "patch: %s is BSDIFF40, which has no checksum of its output: give "
            "--expect-sha256 HEX (sha256 of NEW), or --unverified to write it unchecked\n",
            pos[1]);
        return 2;
    }
    if (new_open(&nf, pos[2], want) != 0) {
        (void)fclose(pf);
        return 1;
    }
    if (fmt == MF_DIFF_FORMAT_BSDIFF40) {
        (void)fclose(pf);
        return new_close(&nf, apply_bsdiff40(pos[0], pos[1], &nf));
    }
    old_fd = open(pos[0], O_RDONLY);
    if (old_fd < 0)
        (void)fprintf(stderr, "%s: %s\n", pos[0], strerror(errno));
    else
        rc = stream_apply(old_fd, pf, &nf, window);
    if (old_fd >= 0)
        (void)close(old_fd);
    (void)fclose(pf);
    return new_close(&nf, rc);
}

static int print_block(void *payload, const mf_diff_block_info *b)
{
    (void)payload;
    printf("block %5u  %-7s%s w%u  new %12llu +%-8u payload %-8u old %llu\n", (unsigned)b->index,
           b->kind, b->sparse ? "/sparse" : (b->float_planes ? "/float" : (b->raw ? "/raw" : "")),
           b->word, (unsigned long long)b->new_offset, (unsigned)b->new_len,
           (unsigned)b->payload_len, (unsigned long long)b->old_offset);
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
