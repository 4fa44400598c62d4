/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's device credential cache (http/http_credcache.h): it answers only for the exact
 * hash it was given, forgets on drop, keeps credentials whose hashes share a set (up to its
 * ways), and a set that is full replaces an entry rather than answering for the wrong
 * credential.
 */
#include "mf_test.h"
#include "http/http_credcache.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static void test_server_credcache__get_put_drop(void **state)
{
    struct mf_credcache *c = NULL;
    struct mf_ctx ctx;
    uint8_t a[MF_SHA256_LEN], b[MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx, 0), MF_OK);
    memset(a, 0x11, sizeof(a));
    memcpy(b, a, sizeof(b));
    b[MF_SHA256_LEN - 1] ^= 1; /* same slot, other credential */
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 0);
    assert_string_equal(id, "");
    mf_httpd__credcache_put(c, a, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 1);
    assert_string_equal(id, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, b, MF_CREDCACHE_ANY_AGE),
                     0);            /* never for a near miss */
    mf_httpd__credcache_drop(c, b); /* not b's slot entry: kept */
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 1);
    mf_httpd__credcache_put(c, b, "cam-2"); /* the same set: both stay */
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 1);
    assert_string_equal(id, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, b, MF_CREDCACHE_ANY_AGE), 1);
    assert_string_equal(id, "cam-2");
    mf_httpd__credcache_drop(c, b);
    assert_int_equal(mf_httpd__credcache_get(id, c, b, MF_CREDCACHE_ANY_AGE), 0);
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 1);
    /* No cache (a server built without one): always a miss, put and drop do nothing. */
    mf_httpd__credcache_put(NULL, a, "cam-1");
    mf_httpd__credcache_drop(NULL, a);
    assert_int_equal(mf_httpd__credcache_get(id, NULL, a, MF_CREDCACHE_ANY_AGE), 0);
    mf_httpd__credcache_free(c);
    mf_httpd__credcache_free(NULL);
}

/* One set holds MF_CREDCACHE_WAYS credentials; one more replaces one of them, each entry
 * answers for its own hash only, and a re-put of a cached hash takes no second slot. */
static void test_server_credcache__full_set(void **state)
{
    struct mf_credcache *c = NULL;
    struct mf_ctx ctx;
    uint8_t h[MF_CREDCACHE_WAYS + 1][MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE], want[16];
    int hits = 0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx, 0), MF_OK);
    for (int i = 0; i <= MF_CREDCACHE_WAYS; i++) {
        memset(h[i], 0x22, MF_SHA256_LEN); /* same first bytes: the same set */
        h[i][MF_SHA256_LEN - 1] = (uint8_t)i;
    }
    for (int i = 0; i < MF_CREDCACHE_WAYS; i++) {
        (void)snprintf(want, sizeof(want), "cam-%d", i);
        mf_httpd__credcache_put(c, h[i], want);
        mf_httpd__credcache_put(c, h[i], want); /* again: no second slot */
    }
    for (int i = 0; i < MF_CREDCACHE_WAYS; i++) {
        (void)snprintf(want, sizeof(want), "cam-%d", i);
        assert_int_equal(mf_httpd__credcache_get(id, c, h[i], MF_CREDCACHE_ANY_AGE), 1);
        assert_string_equal(id, want);
    }
    mf_httpd__credcache_put(c, h[MF_CREDCACHE_WAYS], "cam-new");
    assert_int_equal(mf_httpd__credcache_get(id, c, h[MF_CREDCACHE_WAYS], MF_CREDCACHE_ANY_AGE), 1);
    assert_string_equal(id, "cam-new");
    for (int i = 0; i < MF_CREDCACHE_WAYS; i++) {
        if (mf_httpd__credcache_get(id, c, h[i], MF_CREDCACHE_ANY_AGE)) {
            (void)snprintf(want, sizeof(want), "cam-%d", i);
            assert_string_equal(id, want);
            hits++;
        }
    }
    assert_int_equal(hits, MF_CREDCACHE_WAYS - 1);
    mf_httpd__credcache_free(c);
}

/* An entry answers a route that trusts recent authentication only while it is as young as
 * the route asks; the check-in's any-age lookup still finds it, and a put restarts its age. */
static void test_server_credcache__recent(void **state)
{
    struct mf_credcache *c = NULL;
    struct mf_ctx ctx;
    uint8_t a[MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];
    struct timespec t0, t;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx, 0), MF_OK);
    memset(a, 0x33, sizeof(a));
    mf_httpd__credcache_put(c, a, "cam-1");
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_RECENT_S), 1);
    assert_string_equal(id, "cam-1");
    /* Wait (at most about two seconds) until the put is more than a second old. */
    do {
        struct timespec nap = {0, 20 * 1000 * 1000};

        (void)nanosleep(&nap, NULL);
        (void)clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec < t0.tv_sec + 2);
    assert_int_equal(mf_httpd__credcache_get(id, c, a, 1), 0);
    assert_string_equal(id, "");
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_RECENT_S), 1);
    assert_int_equal(mf_httpd__credcache_get(id, c, a, MF_CREDCACHE_ANY_AGE), 1);
    mf_httpd__credcache_put(c, a, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, a, 1), 1);
    mf_httpd__credcache_free(c);
}

/* A cache of one set keeps four credentials whatever their hashes; a size above the bound
 * is refused. */
static void test_server_credcache__sized(void **state)
{
    struct mf_credcache *c = NULL;
    struct mf_ctx ctx;
    uint8_t h[5][MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];
    int hits = 0;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx, MF_CREDCACHE_SLOTS_MAX + 1), MF_E_INVALID);
    assert_null(c);
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx, 3), MF_OK); /* one set of four */
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < MF_SHA256_LEN; k++)
            h[i][k] = (uint8_t)(i * 37 + k * 11);
        mf_httpd__credcache_put(c, h[i], "cam");
    }
    for (int i = 0; i < 5; i++)
        hits += mf_httpd__credcache_get(id, c, h[i], MF_CREDCACHE_ANY_AGE);
    assert_int_equal(hits, MF_CREDCACHE_WAYS);
    mf_httpd__credcache_free(c);
}

int main(void)
{
    return MF_TEST_RUN("server_credcache", NULL, NULL,
                       cmocka_unit_test(test_server_credcache__get_put_drop),
                       cmocka_unit_test(test_server_credcache__full_set),
                       cmocka_unit_test(test_server_credcache__recent),
                       cmocka_unit_test(test_server_credcache__sized));
}
