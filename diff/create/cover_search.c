/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bsdiff 4.3 cover search (Colin Percival's algorithm) over a libdivsufsort suffix array.
 *
 * Classic bsdiff binary-searches the suffix array at every position of new that does not
 * continue the current match; on model weights, where few 8-byte strings repeat, that is
 * where almost all of its time goes. A one-bit-per-slot filter of the hashes of every 8-byte
 * string of old answers "no match of 8 bytes or more here" without touching the array; such
 * a position cannot start a cover (bsdiff needs a match 9 bytes longer than the current
 * alignment scores), so skipping it keeps bsdiff's output while cutting the searches.
 * Memory: old (borrowed) + 4 x old (suffix array) + old bytes of filter.
 */
#include "create_internal.h"

#include <divsufsort.h>
#include <pthread.h>
#include <string.h>

#define KGRAM 8
/*
 * Matches are measured up to this length. Uncapped, bsdiff is quadratic where a long match
 * scores within 8 bytes of the current alignment (every later position searches again and
 * compares the whole match); capped, the scan advances by at most this much per search,
 * and covers still grow past it through the forward extension.
 */
#define MATCH_CAP (16u * 1024u)
#define MAX_SCAN_THREADS 16
#define MIN_SCAN_SLICE (1u << 20)

struct search_ctx {
    const uint8_t *old;
    size_t old_len;
    const saidx_t *sa;
    const uint8_t *filter;
    uint64_t filter_mask;
};

static uint64_t kgram_hash(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return (v * 0x9E3779B97F4A7C15ull) >> 17;
}

static size_t match_len(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    size_t i = 0;

    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Longest prefix of `nw` found in old; its old position in *pos. */
static size_t sa_longest(const struct search_ctx *s, const uint8_t *nw, size_t nlen, size_t *pos)
{
    size_t lo = 0, hi = s->old_len - 1; /* SA index range [lo, hi]; old_len >= 1 */

    for (;;) {
        if (hi - lo < 2) {
            size_t x = match_len(s->old + s->sa[lo], s->old_len - (size_t)s->sa[lo], nw, nlen);
            size_t y = match_len(s->old + s->sa[hi], s->old_len - (size_t)s->sa[hi], nw, nlen);

            if (x >= y) {
                *pos = (size_t)s->sa[lo];
                return x;
            }
            *pos = (size_t)s->sa[hi];
            return y;
        }
        size_t mid = lo + (hi - lo) / 2;
        size_t off = (size_t)s->sa[mid];
        size_t olen = s->old_len - off;
        size_t n = olen < nlen ? olen : nlen;
        int c = memcmp(s->old + off, nw, n);

        if (c < 0 || (c == 0 && olen < nlen))
            lo = mid;
        else
            hi = mid;
    }
}

static size_t search(const struct search_ctx *s, const uint8_t *nw, size_t nlen, size_t *pos)
{
    *pos = 0;
    if (nlen > MATCH_CAP)
        nlen = MATCH_CAP;
    if (nlen >= KGRAM) {
        uint64_t h = kgram_hash(nw) & s->filter_mask;

        if (!(s->filter[h >> 3] & (1u << (h & 7))))
            return 0;
    }
    return sa_longest(s, nw, nlen, pos);
}

static int push(struct mf_cover_list *l, struct mf_ctx *ctx, const struct mf_cover *c)
{
    l->v = mf_diff__list_push(ctx, l->v, &l->n, &l->cap, sizeof(*c), 1024, "cover list", c);
    return l->v ? MF_OK : MF_E_NOMEM;
}

void mf_diff__cover_list_free(struct mf_ctx *ctx, struct mf_cover_list *l)
{
    mf_ctx__free(ctx, l->v);
    memset(l, 0, sizeof(*l));
}

/* The scan loop of bsdiff.c, with ssize_t arithmetic replaced by checked size_t/int64. */
static int scan_covers(struct mf_cover_list *out, struct mf_ctx *ctx, const struct search_ctx *s,
                       const uint8_t *nw, size_t begin, size_t nlen)
{
    const uint8_t *old = s->old;
    size_t olen = s->old_len;
    size_t scan = begin, len = 0, pos = 0, lastscan = begin;
    size_t lastpos = begin < olen ? begin : olen; /* start on the same-offset alignment */
    int64_t lastoffset = (int64_t)lastpos - (int64_t)lastscan;

    while (scan < nlen) {
        size_t oldscore = 0, scsc;

        for (scsc = scan += len; scan < nlen; scan++) {
            len = search(s, nw + scan, nlen - scan, &pos);
            for (; scsc < scan + len; scsc++) {
                int64_t o = (int64_t)scsc + lastoffset;

                if (o >= 0 && (uint64_t)o < olen && old[o] == nw[scsc])
                    oldscore++;
            }
            if ((len == oldscore && len != 0) || len > oldscore + 8)
                break;
            /*
             * The match merely continues the current alignment (sparse edits): nothing new
             * to cover, so skip it whole instead of searching again at every byte of it.
             */
            int64_t at = (int64_t)scan + lastoffset;
            if (len && at >= 0 && (uint64_t)at + len <= olen &&
                memcmp(old + at, nw + scan, len) == 0) {
                oldscore -= len; /* all of [scan, scan + len) was counted as matching */
                scan += len - 1;
                continue;
            }
            int64_t o = (int64_t)scan + lastoffset;
            if (o >= 0 && (uint64_t)o < olen && old[o] == nw[scan] && oldscore)
                oldscore--;
        }
        if (len != oldscore || scan == nlen) {
            size_t lenf = 0, lenb = 0;
            int64_t sc = 0, best = 0;

            for (size_t i = 0; lastscan + i < scan && lastpos + i < olen;) {
                if (old[lastpos + i] == nw[lastscan + i])
                    sc++;
                i++;
                if (sc * 2 - (int64_t)i > best * 2 - (int64_t)lenf) {
                    best = sc;
                    lenf = i;
                }
            }
            if (scan < nlen) {
                sc = 0;
                best = 0;
                for (size_t i = 1; scan >= lastscan + i && pos >= i; i++) {
                    if (old[pos - i] == nw[scan - i])
                        sc++;
                    if (sc * 2 - (int64_t)i > best * 2 - (int64_t)lenb) {
                        best = sc;
                        lenb = i;
                    }
                }
            }
            if (lastscan + lenf > scan - lenb) {
                size_t overlap = (lastscan + lenf) - (scan - lenb), lens = 0;

                sc = 0;
                best = 0;
                for (size_t i = 0; i < overlap; i++) {
                    if (nw[lastscan + lenf - overlap + i] == old[lastpos + lenf - overlap + i])
                        sc++;
                    if (nw[scan - lenb + i] == old[pos - lenb + i])
                        sc--;
                    if (sc > best) {
                        best = sc;
                        lens = i + 1;
                    }
                }
                lenf += lens - overlap;
                lenb -= lens;
            }
            struct mf_cover c = {lastscan, lastpos, lenf, (scan - lenb) - (lastscan + lenf)};
            /* Empty entries carry no bytes; dropping them keeps "next entry" meaningful. */
            if ((c.add || c.copy) && push(out, ctx, &c) < 0)
                return MF_E_NOMEM;
            lastscan = scan - lenb;
            lastpos = pos - lenb;
            lastoffset = (int64_t)pos - (int64_t)scan;
        }
    }
    return MF_OK;
}

struct scan_part {
    struct mf_cover_list covers;
    struct mf_ctx ctx; /* own message buffer */
    const struct search_ctx *s;
    const uint8_t *nw;
    size_t begin, end;
    int err;
};

static void *scan_part_main(void *arg)
{
    struct scan_part *sp = arg;

    sp->err = scan_covers(&sp->covers, &sp->ctx, sp->s, sp->nw, sp->begin, sp->end);
    return NULL;
}

/*
 * The scan is sequential by nature; cutting new into one slice per thread, each scanned from
 * the same-offset alignment, changes only the covers at the cuts.
 */
static int scan_parallel(struct mf_cover_list *out, struct mf_ctx *ctx, const struct search_ctx *s,
                         const uint8_t *nw, size_t nlen, unsigned int threads)
{
    struct scan_part parts[MAX_SCAN_THREADS];
    pthread_t tids[MAX_SCAN_THREADS];
    unsigned int n = threads > MAX_SCAN_THREADS ? MAX_SCAN_THREADS : threads, started = 0;
    int err = MF_OK;

    if (nlen < MIN_SCAN_SLICE * 2 || n < 2)
        return scan_covers(out, ctx, s, nw, 0, nlen);
    for (unsigned int i = 0; i < n; i++) {
        memset(&parts[i], 0, sizeof(parts[i]));
        parts[i].ctx = *ctx;
        parts[i].s = s;
        parts[i].nw = nw;
        parts[i].begin = nlen / n * i;
        parts[i].end = i + 1 == n ? nlen : nlen / n * (i + 1);
    }
    for (unsigned int i = 1; i < n; i++) {
        if (pthread_create(&tids[i], NULL, scan_part_main, &parts[i]) != 0)
            break;
        started = i;
    }
    scan_part_main(&parts[0]);
    for (unsigned int i = 1; i <= started; i++)
        pthread_join(tids[i], NULL);
    for (unsigned int i = started + 1; i < n; i++)
        scan_part_main(&parts[i]); /* threads that could not start run here */
    for (unsigned int i = 0; i < n && err == MF_OK; i++) {
        if (parts[i].err < 0)
            err = mf_fail(ctx, parts[i].err, "%s", mf_ctx__errmsg(&parts[i].ctx));
        for (size_t k = 0; k < parts[i].covers.n && err == MF_OK; k++)
            err = push(out, ctx, &parts[i].covers.v[k]);
    }
    for (unsigned int i = 0; i < n; i++)
        mf_diff__cover_list_free(ctx, &parts[i].covers);
    return err;
}

int mf_diff__cover_search(struct mf_cover_list *out, struct mf_ctx *ctx, const uint8_t *old,
                          size_t old_len, const uint8_t *new_img, size_t new_len,
                          unsigned int threads)
{
    struct search_ctx s = {old, old_len, NULL, NULL, 0};
    saidx_t *sa = NULL;
    uint8_t *filter = NULL;
    size_t fbits = 1u << 16;
    int err = MF_OK;

    memset(out, 0, sizeof(*out));
    if (old_len > INT32_MAX - 1 || new_len > INT32_MAX - 1)
        return mf_fail(ctx, MF_E_LIMIT, "input of %zu bytes exceeds the 2 GiB suffix array",
                       old_len > new_len ? old_len : new_len);
    if (old_len == 0 || new_len == 0) {
        struct mf_cover c = {0, 0, 0, new_len};

        return new_len ? push(out, ctx, &c) : MF_OK;
    }
    while (fbits < 8 * (uint64_t)old_len && fbits < ((size_t)1 << 34))
        fbits <<= 1;
    sa = mf_ctx__alloc(ctx, (old_len + 1) * sizeof(*sa));
    filter = mf_calloc(&ctx->alloc, fbits / 8, 1);
    if (!sa || !filter) {
        err = mf_fail(ctx, MF_E_NOMEM, "suffix array for %zu old bytes", old_len);
        goto out;
    }
    if (divsufsort(old, sa, (saidx_t)old_len) != 0) {
        err = mf_fail(ctx, MF_E_GENERIC, "divsufsort failed on %zu bytes", old_len);
        goto out;
    }
    for (size_t i = 0; i + KGRAM <= old_len; i++) {
        uint64_t h = kgram_hash(old + i) & (fbits - 1);

        filter[h >> 3] = (uint8_t)(filter[h >> 3] | (1u << (h & 7)));
    }
    s.sa = sa;
    s.filter = filter;
    s.filter_mask = fbits - 1;
    err = scan_parallel(out, ctx, &s, new_img, new_len, threads);
out:
    mf_ctx__free(ctx, sa);
    mf_ctx__free(ctx, filter);
    if (err < 0)
        mf_diff__cover_list_free(ctx, out);
    return err;
}
