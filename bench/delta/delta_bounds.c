/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entropy bounds of the residual planes an mf patch codes (bench/delta/bounds.sh; not a test).
 *
 * usage: mf-delta info PATCH | bench_delta_bounds OLD NEW
 *
 * Reads the block list `mf-delta info` prints and, for every dense or sparse NUMERIC block
 * (the blocks whose payload is the residual new - old, in words of the block's width, at the
 * block's old offset: docs/formats/delta.md), forms the residual exactly as the coder does
 * (difference modulo 2^bits, zigzagged, split into byte planes) and measures its empirical
 * entropy:
 *   o0      order 0, one table per block and plane (the tables zstd gets per block);
 *   o1prev  order 1, each byte given the previous byte of its plane, one table per plane
 *           index and width for the whole patch (per-block tables of 65536 entries would
 *           mostly measure their own overfitting);
 *   o1plane order 1, each byte given the byte of the plane above it in the same word (what a
 *           coder conditioning low planes on high ones can use), tables as for o1prev.
 * Every other block (raw, float planes, copies) counts at its payload size, every block
 * header at 32 bytes and the file header at 104, so each bound is a whole-patch size that
 * no coder of those residuals with that alignment and that order of context goes below
 * (static tables, their own cost not counted). Prints one line:
 *   patch_blocks numeric_bytes other_payload o0 o1prev o1plane    (sizes in bytes)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_W 8

struct planes {
    uint64_t *prev[MAX_W];  /* [256 * 256] per plane: counts of (previous byte, byte) */
    uint64_t *above[MAX_W]; /* [256 * 256] per plane: counts of (plane above's byte, byte) */
};

static struct planes by_width[MAX_W + 1];

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long n = -1;

    if (f && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        exit(2);
    }
    p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    (void)fclose(f);
    *len = (size_t)n;
    return p;
}

/* Sum over contexts of n * H(symbol | context), in bits. */
static double cond_bits(const uint64_t *t, size_t contexts)
{
    double bits = 0;

    for (size_t c = 0; c < contexts; c++) {
        uint64_t total = 0;

        for (int s = 0; s < 256; s++)
            total += t[c * 256 + (size_t)s];
        for (int s = 0; s < 256 && total; s++) {
            uint64_t k = t[c * 256 + (size_t)s];

            if (k)
                bits += (double)k * log2((double)total / (double)k);
        }
    }
    return bits;
}

static uint64_t *table(uint64_t **slot)
{
    if (!*slot) {
        *slot = calloc(256 * 256, sizeof(uint64_t));
        if (!*slot) {
            perror("calloc");
            exit(2);
        }
    }
    return *slot;
}

static uint64_t word_at(const uint8_t *b, size_t len, size_t at, unsigned w)
{
    uint64_t v = 0;

    for (unsigned k = 0; k < w; k++)
        v |= (uint64_t)(at + k < len ? b[at + k] : 0) << (8 * k);
    return v;
}

/* One NUMERIC block: its per-block order-0 bits; the order-1 tables of its width grow. */
static double numeric_block(const uint8_t *ob, size_t olen, const uint8_t *nb, size_t nlen,
                            uint64_t new_off, uint64_t old_off, uint64_t len, unsigned w)
{
    struct planes *pl = &by_width[w];
    uint64_t count[MAX_W][256];
    uint8_t last[MAX_W] = {0};
    uint64_t mask = w == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * w)) - 1);
    uint64_t words = len / w;
    double bits = 8.0 * (double)(len - words * w); /* a tail shorter than a word: raw */

    memset(count, 0, sizeof(count));
    for (uint64_t i = 0; i < words; i++) {
        uint64_t n = word_at(nb, nlen, (size_t)(new_off + i * w), w);
        uint64_t o = word_at(ob, olen, (size_t)(old_off + i * w), w);
        uint64_t r = (n - o) & mask;
        uint64_t sign = (r >> (8 * w - 1)) & 1;
        uint64_t z = ((r << 1) & mask) ^ (sign ? mask : 0);

        for (unsigned k = 0; k < w; k++) {
            uint8_t s = (uint8_t)(z >> (8 * k));
            uint8_t up = k + 1 < w ? (uint8_t)(z >> (8 * (k + 1))) : 0;

            count[k][s]++;
            table(&pl->prev[k])[(size_t)last[k] * 256 + s]++;
            table(&pl->above[k])[(size_t)up * 256 + s]++;
            last[k] = s;
        }
    }
    for (unsigned k = 0; k < w; k++)
        bits += cond_bits(count[k], 1);
    return bits;
}

int main(int argc, char **argv)
{
    size_t olen, nlen;
    uint8_t *ob, *nb;
    char line[512];
    double o0 = 0, o1prev = 0, o1plane = 0, other = 104, numeric = 0;
    unsigned long blocks = 0;

    if (argc != 3) {
        (void)fprintf(stderr, "usage: mf-delta info PATCH | %s OLD NEW\n", argv[0]);
        return 2;
    }
    ob = slurp(argv[1], &olen);
    nb = slurp(argv[2], &nlen);
    while (fgets(line, sizeof(line), stdin)) {
        char kind[32];
        unsigned idx, w;
        unsigned long long new_off, len, payload, old_off;

        if (sscanf(line, "block %u %31s w%u new %llu +%llu payload %llu old %llu", &idx, kind, &w,
                   &new_off, &len, &payload, &old_off) != 7)
            continue;
        blocks++;
        other += 32;
        if ((strcmp(kind, "numeric") == 0 || strcmp(kind, "numeric/sparse") == 0) && w >= 1 &&
            w <= MAX_W) {
            o0 += numeric_block(ob, olen, nb, nlen, new_off, old_off, len, w) / 8;
            numeric += (double)payload;
        } else {
            other += (double)payload;
        }
    }
    for (unsigned w = 1; w <= MAX_W; w++) {
        for (unsigned k = 0; k < w; k++) {
            if (by_width[w].prev[k])
                o1prev += cond_bits(by_width[w].prev[k], 256) / 8;
            if (by_width[w].above[k])
                o1plane += cond_bits(by_width[w].above[k], 256) / 8;
            free(by_width[w].prev[k]);
            free(by_width[w].above[k]);
        }
    }
    printf("%lu %.0f %.0f %.0f %.0f %.0f\n", blocks, numeric, other, other + o0, other + o1prev,
           other + o1plane);
    free(ob);
    free(nb);
    return 0;
}
