/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's device credential cache (http/http_credcache.h): it answers only for the exact
 * hash it was given, forgets on drop, and a clash of slots replaces the older entry rather
 * than answering for the wrong credential.
 */
#include "mf_test.h"
#include "http/http_credcache.h"

#include <string.h>

static void test_server_credcache__get_put_drop(void **state)
{
    struct mf_credcache *c = NULL;
    struct mf_ctx ctx;
    uint8_t a[MF_SHA256_LEN], b[MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    assert_int_equal(mf_httpd__credcache_new(&c, &ctx), MF_OK);
    memset(a, 0x11, sizeof(a));
    memcpy(b, a, sizeof(b));
    b[MF_SHA256_LEN - 1] ^= 1; /* same slot, other credential */
    assert_int_equal(mf_httpd__credcache_get(id, c, a), 0);
    assert_string_equal(id, "");
    mf_httpd__credcache_put(c, a, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, a), 1);
    assert_string_equal(id, "cam-1");
    assert_int_equal(mf_httpd__credcache_get(id, c, b), 0); /* never for a near miss */
    mf_httpd__credcache_drop(c, b);                         /* not b's slot entry: kept */
    assert_int_equal(mf_httpd__credcache_get(id, c, a), 1);
    mf_httpd__credcache_put(c, b, "cam-2"); /* the clash replaces a */
    assert_int_equal(mf_httpd__credcache_get(id, c, a), 0);
    assert_int_equal(mf_httpd__credcache_get(id, c, b), 1);
    assert_string_equal(id, "cam-2");
    mf_httpd__credcache_drop(c, b);
    assert_int_equal(mf_httpd__credcache_get(id, c, b), 0);
    /* No cache (a server built without one): always a miss, put and drop do nothing. */
    mf_httpd__credcache_put(NULL, a, "cam-1");
    mf_httpd__credcache_drop(NULL, a);
    assert_int_equal(mf_httpd__credcache_get(id, NULL, a), 0);
    mf_httpd__credcache_free(c);
    mf_httpd__credcache_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_credcache__get_put_drop),
    };

    return cmocka_run_group_tests_name("server_credcache", tests, NULL, NULL);
}
