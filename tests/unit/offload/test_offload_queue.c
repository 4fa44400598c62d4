/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The durable uplink queue (sdk/offload/offload_queue.c) on the real POSIX port: round
 * trip across restarts, a torn or corrupted last record at every byte offset, eviction of
 * the oldest under the size cap, TTL, de-duplication, and failing storage at every call.
 */
#include "offload_fixture.h"
#include "mf_offload_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QDIR "offload/m"
#define SEG1 QDIR "/q-00000001"

struct qfix {
    struct tplat t;
    struct mf_ctx ctx;
    struct mf_offload_queue q;
    struct mf_offload_queue_config cfg;
    struct mf_kit_alloc ta;
};

static void qfix_init(struct qfix *f)
{
    tplat_init(&f->t);
    (void)mf_kit_alloc_init(&f->ta, -1, MF_KIT_ALLOC_FAIL_ONE);
    mf_ctx__init(&f->ctx, &f->ta.a, NULL, NULL, "test");
    assert_int_equal(f->t.ops.mkdir(f->t.ops.payload, "offload"), MF_OK);
    assert_int_equal(f->t.ops.mkdir(f->t.ops.payload, QDIR), MF_OK);
    f->cfg.dir = QDIR;
    f->cfg.max_bytes = 1024 * 1024;
    f->cfg.seg_bytes = 64 * 1024;
    f->cfg.ttl_s = 3600;
    f->cfg.sync_every = 1;
    f->cfg.dedup_window = 16;
    f->cfg.max_record = 4096;
}

static int qopen(struct qfix *f)
{
    return mf_offload__queue_open(&f->q, &f->ctx, &f->t.ops, &f->cfg);
}

/* Record i: distinct input of 40 + i % 23 bytes, id and output derived from i. */
static size_t make_record(uint8_t *buf, size_t cap, int i, uint64_t *hash)
{
    struct mf_offload_record r;
    uint8_t input[64];
    float out[3] = {(float)i, 1.0f, -2.5f};
    size_t len = 0;

    memset(&r, 0, sizeof(r));
    r.input_len = 40 + (uint32_t)(i % 23);
    for (uint32_t k = 0; k < r.input_len; k++)
        input[k] = (uint8_t)(i * 31 + k);
    r.input = input;
    r.kind = i % 2;
    r.method = MF_OFFLOAD_MARGIN;
    r.output_kind = MF_OFFLOAD_LOGITS;
    r.n_classes = 3;
    r.created_s = 1000 + i;
    r.id[0] = (uint8_t)i;
    r.id[1] = (uint8_t)(i >> 8);
    r.score = 0.25f;
    memcpy(r.model_version, "v1", 3);
    r.hash = mf_offload__fnv1a64(input, r.input_len);
    *hash = r.hash;
    assert_int_equal(mf_offload__record_encode(buf, cap, &len, &r, out), MF_OK);
    return len;
}

static int append(struct qfix *f, int i)
{
    uint8_t buf[512];
    uint64_t h;
    size_t len = make_record(buf, sizeof(buf), i, &h);

    return mf_offload__queue_append(&f->q, buf, len, h);
}

/* Reads every live record; checks each is record ids[k] intact. Returns how many. */
static size_t read_all(struct qfix *f, int *ids, size_t cap)
{
    struct mf_offload_qpos pos = {f->q.cur_seq, f->q.cur_off};
    struct mf_offload_record r;
    size_t n = 0;
    int err;

    for (;;) {
        err = mf_offload__queue_next(&f->q, &pos, &r, NULL);
        if (err != MF_OK)
            break;
        int i = r.id[0] | r.id[1] << 8;

        assert_true(n < cap);
        ids[n++] = i;
        assert_int_equal(r.input_len, 40 + i % 23);
        for (uint32_t k = 0; k < r.input_len; k++)
            assert_int_equal(r.input[k], (uint8_t)(i * 31 + k));
        assert_true(mf_offload__get_f32(r.output) == (float)i);
        assert_int_equal(r.created_s, 1000 + i);
        assert_string_equal(r.model_version, "v1");
    }
    assert_int_equal(err, MF_AGAIN);
    return n;
}

static void test_offload_queue__round_trip_across_restarts(void **state)
{
    struct qfix f;
    int ids[64];

    (void)state;
    qfix_init(&f);
    assert_int_equal(qopen(&f), MF_OK);
    assert_int_equal(f.q.count, 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(append(&f, i), MF_OK);
    mf_offload__queue_close(&f.q);
    tplat_reopen(&f.t);
    assert_int_equal(qopen(&f), MF_OK);
    assert_int_equal(f.q.count, 10);
    /* A restart never appends after old records: new ones go to a new segment. */
    for (int i = 10; i < 15; i++)
        assert_int_equal(append(&f, i), MF_OK);
    assert_int_equal(f.q.last_seq, 2);
    assert_int_equal(read_all(&f, ids, 64), 15);
    for (int i = 0; i < 15; i++)
        assert_int_equal(ids[i], i);
    mf_offload__queue_close(&f.q);
    tplat_done(&f.t);
}

/* Writes the bytes of `name` (in the state dir) back truncated to `cut` or with one byte flipped.
 */
static void damage(struct qfix *f, const uint8_t *orig, size_t size, size_t cut, long flip)
{
    char path[128];
    FILE *fp;

    tplat_path(&f->t, path, sizeof(path), SEG1);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    if (flip >= 0) {
        uint8_t *copy = test_malloc(size);

        memcpy(copy, orig, size);
        copy[flip] ^= 0x5a;
        assert_int_equal(fwrite(copy, 1, size, fp), size);
        test_free(copy);
    } else if (cut) {
        assert_int_equal(fwrite(orig, 1, cut, fp), cut);
    }
    assert_int_equal(fclose(fp), 0);
}

static uint8_t *slurp(struct qfix *f, const char *name, size_t *size)
{
    char path[128];
    struct stat st;
    uint8_t *buf;
    FILE *fp;

    tplat_path(&f->t, path, sizeof(path), name);
    assert_int_equal(stat(path, &st), 0);
    *size = (size_t)st.st_size;
    buf = test_malloc(*size);
    fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(buf, 1, *size, fp), *size);
    assert_int_equal(fclose(fp), 0);
    return buf;
}

static void put_file(struct qfix *f, const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    FILE *fp;

    tplat_path(&f->t, path, sizeof(path), name);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

/*
 * Five records, then the last one is cut at every byte offset, or has any one byte flipped:
 * recovery keeps the first four intact, drops the damaged one, and the queue keeps working
 * (a new record lands after them and survives a restart).
 */
static void test_offload_queue__torn_or_corrupt_tail_at_every_offset(void **state)
{
    struct qfix f;
    uint8_t *orig, *meta;
    size_t size, meta_size, last_off, cases = 0;
    int ids[16];

    (void)state;
    qfix_init(&f);
    assert_int_equal(qopen(&f), MF_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(append(&f, i), MF_OK);
    last_off = f.q.w_off;
    assert_int_equal(append(&f, 4), MF_OK);
    mf_offload__queue_close(&f.q);
    orig = slurp(&f, SEG1, &size);
    meta = slurp(&f, QDIR "/queue.meta", &meta_size);
    assert_true(size > last_off + 40);
    for (int mode = 0; mode < 2; mode++) {
        for (size_t off = last_off; off < size; off++) {
            damage(&f, orig, size, mode ? 0 : off, mode ? (long)off : -1);
            tplat_reopen(&f.t);
            assert_int_equal(qopen(&f), MF_OK);
            if (f.q.count != 4)
                fail_msg("%s at byte %zu: %llu records recovered", mode ? "flip" : "cut", off,
                         (unsigned long long)f.q.count);
            assert_int_equal(read_all(&f, ids, 16), 4);
            assert_int_equal(append(&f, 9), MF_OK);
            mf_offload__queue_close(&f.q);
            tplat_reopen(&f.t);
            assert_int_equal(qopen(&f), MF_OK);
            assert_int_equal(read_all(&f, ids, 16), 5);
            assert_int_equal(ids[3], 3);
            assert_int_equal(ids[4], 9);
            mf_offload__queue_close(&f.q);
            /* Forget the new segment so the next case starts from the same five records. */
            assert_int_equal(f.t.ops.remove(f.t.ops.payload, QDIR "/q-00000002"), MF_OK);
            put_file(&f, QDIR "/queue.meta", meta, meta_size);
            cases++;
        }
    }
    assert_true(cases > 80);
    test_free(orig);
    test_free(meta);
    tplat_done(&f.t);
}

static void test_offload_queue__cap_evicts_oldest_first(void **state)
{
    struct qfix f;
    int ids[256];
    size_t n;

    (void)state;
    qfix_init(&f);
    f.cfg.max_bytes = 8 * 1024;
    f.cfg.seg_bytes = 2 * 1024;
    assert_int_equal(qopen(&f), MF_OK);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(append(&f, i), MF_OK);
        if (f.q.bytes > f.cfg.max_bytes)
            fail_msg("record %d: %llu bytes queued, cap %llu (seq %u..%u cur %u/%llu)", i,
                     (unsigned long long)f.q.bytes, (unsigned long long)f.cfg.max_bytes,
                     f.q.first_seq, f.q.last_seq, f.q.cur_seq, (unsigned long long)f.q.cur_off);
    }
    n = read_all(&f, ids, 256);
    assert_int_equal(n, f.q.count);
    assert_true(n >= 40 && n < 200);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(ids[k], 200 - (int)n + (int)k); /* the newest, in order */
    /* Evicted segments are gone from storage, and the cap still holds after a restart. */
    mf_offload__queue_close(&f.q);
    tplat_reopen(&f.t);
    assert_int_equal(qopen(&f), MF_OK);
    assert_int_equal(f.q.count, n);
    assert_true(f.q.bytes <= f.cfg.max_bytes);
    {
        uint64_t size;

        assert_int_equal(f.t.ops.size(f.t.ops.payload, &size, SEG1), MF_E_NOTFOUND);
    }
    /* A record larger than half the cap is refused with a clear error. */
    f.cfg.max_record = 4096;
    {
        static uint8_t big[4200];

        assert_int_equal(mf_offload__queue_append(&f.q, big, 4096, 1), MF_E_LIMIT);
        assert_non_null(strstr(f.ctx.errmsg, "does not fit"));
    }
    mf_offload__queue_close(&f.q);
    tplat_done(&f.t);
}

static void test_offload_queue__dedup_and_ttl(void **state)
{
    struct qfix f;
    struct mf_offload_record r;
    struct mf_offload_qpos pos;

    (void)state;
    qfix_init(&f);
    assert_int_equal(qopen(&f), MF_OK);
    assert_int_equal(append(&f, 1), MF_OK);
    assert_int_equal(append(&f, 1), MF_AGAIN); /* same input: not queued twice */
    assert_int_equal(append(&f, 2), MF_OK);
    assert_int_equal(f.q.count, 2);
    mf_offload__queue_close(&f.q);
    tplat_reopen(&f.t);
    assert_int_equal(qopen(&f), MF_OK);
    assert_int_equal(append(&f, 2), MF_AGAIN); /* the window is rebuilt on recovery */
    pos.seq = f.q.cur_seq;
    pos.off = f.q.cur_off;
    assert_int_equal(mf_offload__queue_next(&f.q, &pos, &r, NULL), MF_OK);
    assert_false(mf_offload__queue_expired(&f.q, &r, 1001 + 3600));
    assert_true(mf_offload__queue_expired(&f.q, &r, 1001 + 3601));
    assert_false(mf_offload__queue_expired(&f.q, &r, -1)); /* no trusted clock: keep */
    r.created_s = -1;
    assert_false(mf_offload__queue_expired(&f.q, &r, 999999));
    mf_offload__queue_close(&f.q);
    tplat_done(&f.t);
}

/*
 * Storage fails at every call index (then keeps failing: a dead flash). Every append that
 * reported MF_OK is found after a restart on healthy storage, nothing else is, nothing
 * leaks, and every failure has a message.
 */
static void test_offload_queue__failing_storage_at_every_call(void **state)
{
    int done = 0, failures = 0;

    (void)state;
    for (long n = 0; !done && n < 400; n++) {
        struct qfix f;
        int ok[6] = {0}, ids[16];
        size_t got;
        int err;

        qfix_init(&f);
        f.t.fail_at = n;
        f.t.io_calls = 0;
        err = qopen(&f);
        if (err == MF_OK) {
            for (int i = 0; i < 6; i++) {
                err = append(&f, i);
                if (err < 0)
                    assert_true(f.ctx.errmsg[0] != '\0');
                ok[i] = err == MF_OK;
            }
            mf_offload__queue_close(&f.q);
        } else {
            assert_true(f.ctx.errmsg[0] != '\0');
        }
        done = f.t.io_calls <= n;
        failures += !done;
        tplat_reopen(&f.t);
        assert_int_equal(qopen(&f), MF_OK);
        got = read_all(&f, ids, 16);
        for (int i = 0, k = 0; i < 6; i++) {
            int found = 0;

            for (size_t j = 0; j < got; j++)
                found |= ids[j] == i;
            if (ok[i] && !found)
                fail_msg("fail_at %ld: acknowledged record %d lost", n, i);
            k += found;
        }
        assert_true(got <= 6);
        mf_offload__queue_close(&f.q);
        tplat_done(&f.t);
    }
    assert_true(done);
    assert_true(failures > 10);
}

static void test_offload_queue__allocation_failures_are_clean(void **state)
{
    (void)state;
    for (long n = 0; n < 4; n++) {
        struct qfix f;
        int err;

        qfix_init(&f);
        f.ta.fail_at = n;
        err = qopen(&f);
        if (n < 2) {
            assert_int_equal(err, MF_E_NOMEM);
            assert_non_null(strstr(f.ctx.errmsg, "no memory"));
        } else {
            assert_int_equal(err, MF_OK);
            mf_offload__queue_close(&f.q);
        }
        tplat_done(&f.t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offload_queue__round_trip_across_restarts),
        cmocka_unit_test(test_offload_queue__torn_or_corrupt_tail_at_every_offset),
        cmocka_unit_test(test_offload_queue__cap_evicts_oldest_first),
        cmocka_unit_test(test_offload_queue__dedup_and_ttl),
        cmocka_unit_test(test_offload_queue__failing_storage_at_every_call),
        cmocka_unit_test(test_offload_queue__allocation_failures_are_clean),
    };
    return cmocka_run_group_tests_name("offload_queue", tests, NULL, NULL);
}
