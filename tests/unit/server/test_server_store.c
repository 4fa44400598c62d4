/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store behind struct mf_store_ops, and `mf-server init` on a data directory. The
 * backend-neutral cases run on SQLite, or on PostgreSQL when the mf_pg fixture names one
 * (MF_TEST_PG_URL_FILE, ctest's unit_server_store_pg): both backends pass the same suite.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "app/server.h"
#include "common/token.h"
#include "store/pg/pg_store.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int store_setup(void **state)
{
    *state = store_fixture_new("store", 0);
    return 0;
}

/* Opens (creating) and migrates the fixture's store. */
static struct mf_store *open_migrated(struct store_fixture *f)
{
    int applied = -1;

    assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 1), MF_OK);
    assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    return f->s;
}

static void test_server_store__migrate_empty_then_idempotent(void **state)
{
    struct store_fixture *f = *state;
    int applied = -1, version = -1;
    struct mf_store *s;

    assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 1), MF_OK);
    s = f->s;
    assert_int_equal(s->ops->migrate(&applied, s, &f->ctx), MF_OK);
    assert_true(applied >= 1);
    assert_int_equal(s->ops->schema_version(&version, s, &f->ctx), MF_OK);
    assert_int_equal(version, applied);
    /* Re-run on the same handle and after a reopen: nothing left to apply. */
    assert_int_equal(s->ops->migrate(&applied, s, &f->ctx), MF_OK);
    assert_int_equal(applied, 0);
    mf_store__close(s);
    assert_int_equal(mf_store__open(&f->s, &f->ctx, f->url, 0), MF_OK);
    assert_int_equal(f->s->ops->migrate(&applied, f->s, &f->ctx), MF_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(f->s->ops->schema_version(&applied, f->s, &f->ctx), MF_OK);
    assert_int_equal(applied, version);
}

static void test_server_store__open_errors(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = NULL;

    /* SQLite files (joins the SQLite run only, see main()); test_store_pg has PostgreSQL's
     * own open errors. */
    assert_false(f->pg);
    assert_int_equal(mf_store__open(&s, &f->ctx, f->db, 0), MF_E_NOTFOUND);
    assert_null(s);
    assert_int_equal(mf_store__open(&s, &f->ctx, "nosuch://x", 1), MF_E_INVALID);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "nosuch"));
    /* The explicit scheme selects the same backend as a bare path. */
    assert_int_equal(mf_store__open(&s, &f->ctx, "sqlite:/nonexistent-dir/x.db", 1), MF_E_NOTFOUND);
}

static void test_server_store__tokens_by_hash(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    uint8_t h1[MF_SHA256_LEN], h2[MF_SHA256_LEN];
    int count = -1;

    mf_token__hash(h1, "mfa_one", 7);
    mf_token__hash(h2, "mfa_two", 7);
    assert_int_equal(s->ops->auth->token_count(&count, s, &f->ctx, MF_TOKEN_ADMIN), MF_OK);
    assert_int_equal(count, 0);
    assert_int_equal(s->ops->auth->token_insert(s, &f->ctx, MF_TOKEN_ADMIN, h1, 1), MF_OK);
    assert_int_equal(s->ops->auth->token_check(s, &f->ctx, MF_TOKEN_ADMIN, h1), MF_OK);
    assert_int_equal(s->ops->auth->token_check(s, &f->ctx, MF_TOKEN_ADMIN, h2), MF_E_AUTH);
    /* A token is valid only for its own kind. */
    assert_int_equal(s->ops->auth->token_check(s, &f->ctx, MF_TOKEN_ENROLL, h1), MF_E_AUTH);
    assert_int_equal(s->ops->auth->token_count(&count, s, &f->ctx, MF_TOKEN_ADMIN), MF_OK);
    assert_int_equal(count, 1);
    /* The same hash twice is a constraint violation, not a silent duplicate. */
    assert_int_equal(s->ops->auth->token_insert(s, &f->ctx, MF_TOKEN_ADMIN, h1, 1), MF_E_STATE);
}

static void test_server_store__device_reenroll_revokes(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    uint8_t c1[MF_SHA256_LEN], c2[MF_SHA256_LEN];
    char id[MF_STORE_NAME_SIZE];

    mf_token__hash(c1, "cred-1", 6);
    mf_token__hash(c2, "cred-2", 6);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, c1), MF_E_AUTH);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "cam-1", c1, 10), MF_OK);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, c1), MF_OK);
    assert_string_equal(id, "cam-1");
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "cam-1", c2, 20), MF_OK);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, c1), MF_E_AUTH);
    assert_int_equal(s->ops->auth->device_auth(id, s, &f->ctx, c2), MF_OK);
}

static int count_versions(void *payload, const struct mf_store_version *v)
{
    int *n = payload;

    (void)v;
    (*n)++;
    return MF_OK;
}

static void test_server_store__versions(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_version v = {"det", "v1", "", 10, 100, 0, 0, "", 0, ""}, got;
    int n = 0;

    memset(v.sha256, 'a', MF_SHA256_HEX_LEN);
    assert_int_equal(s->ops->registry->version_latest(&got, s, &f->ctx, "det"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_E_STATE);
    /* "newest" is publish order, not string order: v10 before v9 stays older. */
    (void)snprintf(v.version, sizeof(v.version), "v10");
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    (void)snprintf(v.version, sizeof(v.version), "v9");
    v.size = 9;
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    assert_int_equal(s->ops->registry->version_latest(&got, s, &f->ctx, "det"), MF_OK);
    assert_string_equal(got.version, "v9");
    assert_int_equal(got.size, 9);
    assert_int_equal(s->ops->registry->version_get(&got, s, &f->ctx, "det", "v10"), MF_OK);
    assert_int_equal(got.size, 10);
    assert_int_equal(s->ops->registry->version_get(&got, s, &f->ctx, "det", "v11"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->versions_list(s, &f->ctx, count_versions, &n), MF_OK);
    assert_int_equal(n, 3);
}

/* Variants listed in order: "name@rank" joined by spaces. */
static int list_variants(void *payload, const struct mf_store_variant *x)
{
    char *out = payload;
    size_t len = strlen(out);

    (void)snprintf(out + len, 256 - len, "%s%s/%s@%lld", len ? " " : "", x->version, x->variant,
                   (long long)x->rank);
    return MF_OK;
}

/* Migration 12: variants of a version, staged then released; listings by version upload
 * order, then rank, then name; both backends. */
static void test_server_store__variants(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_version v = {"det", "v1", "", 10, 100, 0, 0, "", 0, ""};
    struct mf_store_variant x, got;
    struct mf_dynbuf env;
    char list[256] = "";

    memset(v.sha256, 'a', MF_SHA256_HEX_LEN);
    memset(&x, 0, sizeof(x));
    (void)snprintf(x.model, sizeof(x.model), "det");
    (void)snprintf(x.version, sizeof(x.version), "v1");
    (void)snprintf(x.variant, sizeof(x.variant), "int8");
    memset(x.sha256, 'b', MF_SHA256_HEX_LEN);
    x.size = 7;
    x.rank = 2;
    x.needs.min_ram_mb = 256;
    x.needs.int8 = 1;
    (void)snprintf(x.needs.accelerator, sizeof(x.needs.accelerator), "npu");
    (void)snprintf(x.needs.class_tag, sizeof(x.needs.class_tag), "cam-lite");
    /* No version yet: nothing to hang it on. */
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    (void)snprintf(v.version, sizeof(v.version), "v2");
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_OK);
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_E_STATE);
    assert_int_equal(s->ops->variants->variant_get(&got, s, &f->ctx, "det", "v1", "int8"), MF_OK);
    assert_memory_equal(&got.needs, &x.needs, sizeof(x.needs));
    assert_string_equal(got.sha256, x.sha256);
    assert_int_equal(got.size, 7);
    assert_int_equal(got.rank, 2);
    assert_string_equal(got.release_digest, "");
    assert_int_equal(s->ops->variants->variant_get(&got, s, &f->ctx, "det", "v1", "fp16"),
                     MF_E_NOTFOUND);
    (void)snprintf(x.variant, sizeof(x.variant), "fp16");
    x.rank = 1;
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_OK);
    (void)snprintf(x.version, sizeof(x.version), "v2");
    (void)snprintf(x.variant, sizeof(x.variant), "a");
    x.rank = 1;
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_OK);
    (void)snprintf(x.variant, sizeof(x.variant), "B");
    assert_int_equal(s->ops->variants->variant_insert(s, &f->ctx, &x), MF_OK);
    assert_int_equal(
        s->ops->variants->variants_list(s, &f->ctx, "det", NULL, 0, list_variants, list), MF_OK);
    assert_string_equal(list, "v1/fp16@1 v1/int8@2 v2/B@1 v2/a@1");
    list[0] = '\0';
    assert_int_equal(
        s->ops->variants->variants_list(s, &f->ctx, "det", "v1", 1, list_variants, list), MF_OK);
    assert_string_equal(list, ""); /* none released */
    /* Its release: once, then refused; listed as released. */
    (void)snprintf(x.version, sizeof(x.version), "v1");
    (void)snprintf(x.variant, sizeof(x.variant), "int8");
    memset(x.release_digest, 'e', MF_SHA256_HEX_LEN);
    assert_int_equal(s->ops->variants->variant_release_get(&env, s, &f->ctx, "det", "v1", "int8"),
                     MF_E_NOTFOUND);
    mf_dynbuf__free(&env);
    assert_int_equal(s->ops->variants->variant_release_set(s, &f->ctx, &x, "ENV", 3), MF_OK);
    assert_int_equal(s->ops->variants->variant_release_set(s, &f->ctx, &x, "ENV2", 4), MF_E_STATE);
    assert_int_equal(s->ops->variants->variant_release_get(&env, s, &f->ctx, "det", "v1", "int8"),
                     MF_OK);
    assert_int_equal(env.len, 3);
    assert_memory_equal(env.data, "ENV", 3);
    mf_dynbuf__free(&env);
    assert_int_equal(
        s->ops->variants->variants_list(s, &f->ctx, "det", "v1", 1, list_variants, list), MF_OK);
    assert_string_equal(list, "v1/int8@2");
    assert_int_equal(s->ops->variants->variant_get(&got, s, &f->ctx, "det", "v1", "int8"), MF_OK);
    assert_string_equal(got.release_digest, x.release_digest);
}

static void test_server_store__releases(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_version v = {"det", "v1", "", 10, 100, 0, 0, "", 0, ""}, got;
    struct mf_dynbuf env;

    memset(v.sha256, 'a', MF_SHA256_HEX_LEN);
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    (void)snprintf(v.version, sizeof(v.version), "v2");
    assert_int_equal(s->ops->registry->version_insert(s, &f->ctx, &v), MF_OK);
    /* Staged versions are never "latest released" and have no release. */
    assert_int_equal(s->ops->registry->release_latest(&got, s, &f->ctx, "det"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->release_get(&env, s, &f->ctx, "det", "v1"), MF_E_NOTFOUND);
    mf_dynbuf__free(&env);
    /* v2 released with sequence 5, then v1 with 3: refused, sequences only grow. */
    v.sequence = 5;
    v.security_floor = 2;
    memset(v.release_digest, 'b', MF_SHA256_HEX_LEN);
    memset(v.chunks_sha256, 'c', MF_SHA256_HEX_LEN); /* migration 15: its chunk list */
    assert_int_equal(s->ops->registry->release_set(s, &f->ctx, &v, "{\"r\":2}", 7), MF_OK);
    (void)snprintf(v.version, sizeof(v.version), "v1");
    v.sequence = 5;
    assert_int_equal(s->ops->registry->release_set(s, &f->ctx, &v, "{}", 2), MF_E_STATE);
    v.sequence = 3;
    assert_int_equal(s->ops->registry->release_set(s, &f->ctx, &v, "{}", 2), MF_E_STATE);
    assert_non_null(strstr(mf_ctx__errmsg(&f->ctx), "not above the released 5"));
    (void)snprintf(v.version, sizeof(v.version), "v7");
    v.sequence = 6;
    assert_int_equal(s->ops->registry->release_set(s, &f->ctx, &v, "{}", 2), MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->release_latest(&got, s, &f->ctx, "det"), MF_OK);
    assert_string_equal(got.version, "v2");
    assert_int_equal(got.sequence, 5);
    assert_int_equal(got.security_floor, 2);
    assert_int_equal(got.release_digest[0], 'b');
    assert_int_equal(strlen(got.chunks_sha256), MF_SHA256_HEX_LEN);
    assert_int_equal(got.chunks_sha256[MF_SHA256_HEX_LEN - 1], 'c');
    assert_int_equal(s->ops->registry->release_get(&env, s, &f->ctx, "det", "v2"), MF_OK);
    assert_int_equal(env.len, 7);
    assert_memory_equal(env.data, "{\"r\":2}", 7);
    mf_dynbuf__free(&env);
    assert_int_equal(s->ops->registry->release_set(s, &f->ctx, &v, "{}", MF_STORE_ENVELOPE_MAX + 1),
                     MF_E_LIMIT);
}

static int collect_roots(void *payload, uint64_t version, const void *env, size_t len)
{
    uint64_t *seen = payload;

    (void)env;
    assert_int_equal(len, 2);
    seen[seen[0]++ + 1] = version;
    return MF_OK;
}

static void test_server_store__trust_docs_and_sequence(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    uint64_t version = 9, seen[8] = {0}, first = 0;
    uint8_t hash[MF_SHA256_LEN] = {1};
    struct mf_dynbuf env;

    assert_int_equal(
        s->ops->registry->trust_latest(&version, &env, s, &f->ctx, MF_STORE_TRUST_ROOT),
        MF_E_NOTFOUND);
    mf_dynbuf__free(&env);
    for (uint64_t v = 1; v <= 4; v++)
        assert_int_equal(s->ops->registry->trust_put(s, &f->ctx, MF_STORE_TRUST_ROOT, v, "r0", 2),
                         MF_OK);
    assert_int_equal(s->ops->registry->trust_put(s, &f->ctx, MF_STORE_TRUST_ROOT, 2, "r0", 2),
                     MF_E_STATE);
    assert_int_equal(s->ops->registry->trust_put(s, &f->ctx, MF_STORE_TRUST_KEYS, 1, "k1", 2),
                     MF_OK);
    assert_int_equal(
        s->ops->registry->trust_latest(&version, &env, s, &f->ctx, MF_STORE_TRUST_ROOT), MF_OK);
    assert_int_equal(version, 4);
    mf_dynbuf__free(&env);
    assert_int_equal(
        s->ops->registry->trust_latest(&version, &env, s, &f->ctx, MF_STORE_TRUST_KEYS), MF_OK);
    assert_int_equal(version, 1);
    assert_memory_equal(env.data, "k1", 2);
    mf_dynbuf__free(&env);
    /* Roots after the device's, ascending, bounded. */
    assert_int_equal(s->ops->registry->trust_roots_after(s, &f->ctx, 1, 2, collect_roots, seen),
                     MF_OK);
    assert_int_equal(seen[0], 2);
    assert_int_equal(seen[1], 2);
    assert_int_equal(seen[2], 3);
    /* Director sequence: blocks of numbers that never repeat, per device. */
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "ghost", 1),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", hash, 1), MF_OK);
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 2),
                     MF_OK);
    assert_int_equal(first, 1);
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 1),
                     MF_OK);
    assert_int_equal(first, 3);
}

/* Reservations do not wait for the disk, so a power loss may take the last of them with it.
 * A node that starts again (the store re-opened) still issues numbers above every number
 * issued before, even when none of those reached the disk. */
static void test_server_store__sequence_above_all_after_restart(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    uint8_t hash[MF_SHA256_LEN] = {7};
    uint64_t first = 0, last;

    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", hash, 1), MF_OK);
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 1),
                     MF_OK);
    assert_int_equal(first, 1); /* a new store starts at 1 */
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 3),
                     MF_OK);
    assert_int_equal(first, 2);
    last = first + 2;
    for (int restart = 0; restart < 3; restart++) {
        mf_store__close(f->s);
        f->s = NULL;
        /* As after a power loss that lost every reservation since the device enrolled. */
        store_fixture_exec(f, "UPDATE devices SET assign_seq = 0");
        s = open_migrated(f);
        assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 2),
                         MF_OK);
        assert_true(first > last);
        assert_true(first + 1 < (1ull << 53)); /* exact as a JSON number on the device */
        last = first + 1;
        assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 1),
                         MF_OK);
        assert_int_equal(first, last + 1);
        last = first;
    }
}

static void new_rollout(struct mf_store_rollout *r)
{
    memset(r, 0, sizeof(*r));
    (void)snprintf(r->model, sizeof(r->model), "det");
    (void)snprintf(r->version, sizeof(r->version), "v2");
    (void)snprintf(r->prev_version, sizeof(r->prev_version), "v1");
    (void)snprintf(r->state, sizeof(r->state), "running");
    (void)snprintf(r->plan, sizeof(r->plan), "{}");
}

static const uint8_t dev1_hash[MF_SHA256_LEN] = {9};
static const uint8_t dev2_hash[MF_SHA256_LEN] = {8};

/* checkin_begin with no model and no numbers: the generation alone. */
static uint64_t generation(struct store_fixture *f, struct mf_store *s)
{
    uint64_t g = 0, first = 0;

    assert_int_equal(mf_store__checkin_begin(&g, &first, NULL, s, &f->ctx, "dev-1", dev1_hash, 0,
                                             NULL, 0, 9, NULL),
                     MF_OK);
    return g;
}

/* The generation checkin_begin returns rises with every change to what nodes cache for
 * check-ins, whichever op makes it, and stays put for check-ins' own writes. */
static void test_server_store__generation_follows_cached_tables(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_version v = {"det", "v1", "", 10, 100, 0, 0, "", 0, ""};
    struct mf_store_delta d = {.model = "det", .size = 5, .format = "mfdelta", .created_at = 1};
    struct mf_store_pin pin = {MF_STORE_PIN_DEVICE, "dev-1", "det", "v1", 1};
    const char *groups[] = {"lab"};
    struct mf_store_rollout r;
    uint64_t g = 0, prev = 0, first = 0;

    assert_int_equal(mf_store__checkin_begin(&g, &first, NULL, s, &f->ctx, "ghost", dev1_hash, 0,
                                             NULL, 0, 5, NULL),
                     MF_E_AUTH);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", dev1_hash, 1), MF_OK);
    prev = generation(f, s);
    assert_true(prev >= 1);
    /* A check-in's own writes, and a device's groups and channel (read on every check-in
     * whose model has pins), do not move it. */
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-1", 1),
                     MF_OK);
    assert_int_equal(s->ops->devices->device_touch(s, &f->ctx, "dev-1", 6), MF_OK);
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "dev-1", groups, 1), MF_OK);
    assert_int_equal(s->ops->director->device_channel_set(s, &f->ctx, "dev-1", "beta"), MF_OK);
    assert_int_equal(generation(f, s), prev);
#define EXPECT_RISE(call)                                                                          \
    do {                                                                                           \
        assert_int_equal((call), MF_OK);                                                           \
        g = generation(f, s);                                                                      \
        assert_true(g > prev);                                                                     \
        prev = g;                                                                                  \
    } while (0)
    EXPECT_RISE(s->ops->registry->trust_put(s, &f->ctx, MF_STORE_TRUST_ROOT, 1, "r1", 2));
    EXPECT_RISE(s->ops->registry->trust_put(s, &f->ctx, MF_STORE_TRUST_KEYS, 1, "k1", 2));
    memset(v.sha256, 'a', MF_SHA256_HEX_LEN);
    EXPECT_RISE(s->ops->registry->version_insert(s, &f->ctx, &v));
    v.sequence = 1;
    memset(v.release_digest, 'b', MF_SHA256_HEX_LEN);
    EXPECT_RISE(s->ops->registry->release_set(s, &f->ctx, &v, "{}", 2));
    memset(d.from_sha256, 'a', MF_SHA256_HEX_LEN);
    memset(d.to_sha256, 'c', MF_SHA256_HEX_LEN);
    memset(d.delta_sha256, 'd', MF_SHA256_HEX_LEN);
    EXPECT_RISE(s->ops->registry->delta_insert(s, &f->ctx, &d));
    new_rollout(&r);
    EXPECT_RISE(s->ops->rollout->rollout_put(s, &f->ctx, &r, ""));
    (void)snprintf(r.state, sizeof(r.state), "paused");
    EXPECT_RISE(s->ops->rollout->rollout_put(s, &f->ctx, &r, "running"));
    /* Pins of every scope (migration 8): set, changed, cleared. */
    EXPECT_RISE(s->ops->director->pin_set(s, &f->ctx, &pin));
    (void)snprintf(pin.version, sizeof(pin.version), "v2");
    EXPECT_RISE(s->ops->director->pin_set(s, &f->ctx, &pin));
    EXPECT_RISE(s->ops->director->pin_clear(s, &f->ctx, pin.scope, pin.target, pin.model));
    /* Group settings (migration 9): the check-in cache knows whether any group has one. */
    EXPECT_RISE(s->ops->director->group_poll_set(s, &f->ctx, "lab", 300, 10, 7));
    EXPECT_RISE(s->ops->director->group_poll_set(s, &f->ctx, "lab", 0, 0, 8));
#undef EXPECT_RISE
}

static int collect_settings(void *payload, const struct mf_store_group_settings *g)
{
    struct mf_store_group_settings *out = payload;

    while (out->group[0])
        out++;
    *out = *g;
    return MF_OK;
}

/* Group settings: set, kept apart (poll and window), read per device from its first group
 * by name that has each, cleared, refused for a group with no member; both backends. */
static void test_server_store__group_settings(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    const struct mf_store_director_ops *d = s->ops->director;
    const char *both[] = {"a-lab", "b-field"}, *field[] = {"b-field"};
    struct mf_store_group_settings got, list[4];

    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", dev1_hash, 1), MF_OK);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-2", dev2_hash, 1), MF_OK);
    assert_int_equal(d->device_groups_set(s, &f->ctx, "dev-1", both, 2), MF_OK);
    assert_int_equal(d->device_groups_set(s, &f->ctx, "dev-2", field, 1), MF_OK);
    assert_int_equal(d->group_poll_set(s, &f->ctx, "nobody", 60, 0, 5), MF_E_NOTFOUND);
    assert_non_null(strstr(f->ctx.errmsg, "unknown group 'nobody'"));
    assert_int_equal(d->group_poll_set(s, &f->ctx, "a-lab", 0, 0, 5), MF_E_NOTFOUND);
    assert_non_null(strstr(f->ctx.errmsg, "group 'a-lab' has no poll interval set"));
    assert_int_equal(d->device_settings_get(&got, s, &f->ctx, "dev-1"), MF_OK);
    assert_string_equal(got.group, "");
    assert_int_equal(got.window_start_min, -1);

    assert_int_equal(d->group_poll_set(s, &f->ctx, "b-field", 900, 20, 5), MF_OK);
    assert_int_equal(d->group_window_set(s, &f->ctx, "b-field", 120, 300, 60, 6), MF_OK);
    assert_int_equal(d->group_poll_set(s, &f->ctx, "a-lab", 30, 0, 7), MF_OK);
    /* dev-1: poll from a-lab (first by name), window from b-field (the only one with it). */
    assert_int_equal(d->device_settings_get(&got, s, &f->ctx, "dev-1"), MF_OK);
    assert_string_equal(got.group, "a-lab");
    assert_int_equal(got.poll_interval_s, 30);
    assert_int_equal(got.poll_jitter_pct, 0);
    assert_int_equal(got.window_start_min, 120);
    assert_int_equal(got.window_end_min, 300);
    assert_int_equal(got.window_utc_offset_min, 60);
    assert_int_equal(d->device_settings_get(&got, s, &f->ctx, "dev-2"), MF_OK);
    assert_string_equal(got.group, "b-field");
    assert_int_equal(got.poll_interval_s, 900);
    assert_int_equal(got.poll_jitter_pct, 20);
    assert_int_equal(d->device_settings_get(&got, s, &f->ctx, "ghost"), MF_OK);
    assert_string_equal(got.group, "");

    memset(list, 0, sizeof(list));
    assert_int_equal(d->group_settings_list(s, &f->ctx, collect_settings, list), MF_OK);
    assert_string_equal(list[0].group, "a-lab");
    assert_int_equal(list[0].window_start_min, -1);
    assert_string_equal(list[1].group, "b-field");
    assert_int_equal(list[1].poll_interval_s, 900);
    assert_int_equal(list[1].window_end_min, 300);
    assert_int_equal(list[1].updated_at, 6);
    assert_string_equal(list[2].group, "");

    /* Clearing the poll interval keeps the window; clearing both drops the row. */
    assert_int_equal(d->group_poll_set(s, &f->ctx, "b-field", 0, 0, 8), MF_OK);
    assert_int_equal(d->device_settings_get(&got, s, &f->ctx, "dev-2"), MF_OK);
    assert_string_equal(got.group, "");
    assert_int_equal(got.window_start_min, 120);
    assert_int_equal(d->group_window_set(s, &f->ctx, "b-field", -1, 0, 0, 9), MF_OK);
    assert_int_equal(d->group_window_set(s, &f->ctx, "b-field", -1, 0, 0, 9), MF_E_NOTFOUND);
    assert_non_null(strstr(f->ctx.errmsg, "group 'b-field' has no install window set"));
    memset(list, 0, sizeof(list));
    assert_int_equal(d->group_settings_list(s, &f->ctx, collect_settings, list), MF_OK);
    assert_string_equal(list[0].group, "a-lab");
    assert_string_equal(list[1].group, "");
}

/* checkin_begin is device_touch + device_reserve_sequence + directives_get of each model in
 * one go: the same numbers, the same directives, in model order. */
static void test_server_store__checkin_begin(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    static const char *const models[] = {"det", "cls", "seg"};
    const char *groups[] = {"lab"};
    struct mf_store_pin pins[] = {
        {MF_STORE_PIN_DEVICE, "dev-1", "det", "v1", 1},
        {MF_STORE_PIN_GROUP, "lab", "cls", "v7", 1},
        {MF_STORE_PIN_CHANNEL, "beta", "cls", "v3", 1},
        {MF_STORE_PIN_FLEET, "*", "seg", "v2", 1},
    };
    struct mf_store_directives dirs[3], want;
    uint8_t hash[MF_SHA256_LEN] = {3}, other[MF_SHA256_LEN] = {4};
    uint64_t g = 0, first = 0, next = 0;

    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", hash, 1), MF_OK);
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "dev-1", groups, 1), MF_OK);
    assert_int_equal(s->ops->director->device_channel_set(s, &f->ctx, "dev-1", "beta"), MF_OK);
    for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++)
        assert_int_equal(s->ops->director->pin_set(s, &f->ctx, &pins[i]), MF_OK);
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", hash, 3, models,
                                             3, 77, NULL),
                     MF_OK);
    assert_int_equal(first, 1);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s->ops->director->directives_get(&want, s, &f->ctx, "dev-1", models[i]),
                         MF_OK);
        assert_memory_equal(&dirs[i], &want, sizeof(want));
    }
    assert_string_equal(dirs[0].device_pin, "v1");
    assert_string_equal(dirs[1].group, "lab");
    assert_string_equal(dirs[1].group_pin, "v7");
    assert_string_equal(dirs[1].channel_version, "v3");
    assert_string_equal(dirs[2].fleet_rollback, "v2");
    /* The block was reserved: the next number follows it. */
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&next, s, &f->ctx, "dev-1", 1),
                     MF_OK);
    assert_int_equal(next, 4);
    assert_int_equal(
        mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", hash, 0, NULL, 0, 78, NULL),
        MF_OK);
    assert_int_equal(first, 5); /* no numbers taken: the next one */
    /* A credential the device no longer holds (re-enrolled, revoked): refused, and nothing
     * written, so the next number is still 5. */
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", other, 2,
                                             models, 2, 79, NULL),
                     MF_E_AUTH);
    assert_int_equal(s->ops->auth->device_revoke(s, &f->ctx, "dev-1"), MF_OK);
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", hash, 2, models,
                                             2, 80, NULL),
                     MF_E_AUTH);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", other, 81), MF_OK);
    assert_int_equal(
        mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", other, 0, NULL, 0, 82, NULL),
        MF_OK);
    assert_int_equal(first, 5);
}

/* last_seen of one device, through devices_list. */
struct seen_probe {
    const char *device_id;
    int64_t last_seen;
};

static int probe_seen(void *payload, const struct mf_store_device *d)
{
    struct seen_probe *p = payload;

    if (strcmp(d->device_id, p->device_id) == 0)
        p->last_seen = d->last_seen;
    return MF_OK;
}

static int64_t last_seen_of(struct store_fixture *f, const char *device_id)
{
    struct seen_probe p = {device_id, -1};

    assert_int_equal(f->s->ops->devices->devices_list(f->s, &f->ctx, probe_seen, &p), MF_OK);
    return p.last_seen;
}

/* Check-ins that arrived together go to the store in one checkin_begin call (one
 * transaction on SQLite, one statement for those the hint names unpinned on PostgreSQL):
 * each gets its own numbers, directives and error, a refused one changes nothing and stops
 * none of the others, and a device twice in the batch gets two blocks that do not overlap
 * (on PostgreSQL from its one row of the statement); twice with another credential, the
 * other is refused alone. */
/* The batch's directives once the pin v9 is set: blocks 0 and 2 (dev-1) carry it, block 1
 * (dev-2, on beta) has no device pin. */
static void expect_v9_batch(const struct mf_store_directives *dirs)
{
    assert_string_equal(dirs[0].device_pin, "v9");
    assert_string_equal(dirs[2].device_pin, "v9");
    assert_string_equal(dirs[1].device_pin, "");
    assert_string_equal(dirs[1].channel, "beta");
}

/* Directives with no pin of any scope, following `channel`. */
static void expect_unpinned(const struct mf_store_directives *d, const char *channel)
{
    assert_string_equal(d->fleet_rollback, "");
    assert_string_equal(d->device_pin, "");
    assert_string_equal(d->group, "");
    assert_string_equal(d->group_pin, "");
    assert_string_equal(d->channel_version, "");
    assert_string_equal(d->channel, channel);
}

static void test_server_store__checkin_begin_batch(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    static const char *const det[] = {"det"};
    uint8_t h1[MF_SHA256_LEN] = {1}, h2[MF_SHA256_LEN] = {2}, h3[MF_SHA256_LEN] = {3};
    uint8_t wrong[MF_SHA256_LEN] = {9};
    struct mf_store_pin pin = {MF_STORE_PIN_DEVICE, "dev-1", "det", "v9", 1};
    struct mf_store_directives dirs[7];
    struct mf_ctx ctxs[7];
    struct mf_store_pin_hint hint = {0, 1};
    struct mf_store_checkin c[7];
    uint64_t g0 = 0, first = 0, batched;

    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", h1, 1), MF_OK);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-2", h2, 1), MF_OK);
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-3", h3, 1), MF_OK);
    assert_int_equal(s->ops->director->device_channel_set(s, &f->ctx, "dev-2", "beta"), MF_OK);
    assert_int_equal(
        mf_store__checkin_begin(&g0, &first, NULL, s, &f->ctx, "dev-3", h3, 0, NULL, 0, 2, NULL),
        MF_OK);
    hint.generation = g0;
    for (size_t i = 0; i < 7; i++) {
        mf_ctx__init(&ctxs[i], NULL, NULL, NULL, "test");
        c[i] = (struct mf_store_checkin){.ctx = &ctxs[i],
                                         .n_seq = 1,
                                         .models = det,
                                         .n_models = 1,
                                         .now = 100 + (int64_t)i,
                                         .hint = &hint,
                                         .dirs = &dirs[i]};
    }
    c[0].device_id = "dev-1", c[0].cred_hash = h1;
    c[1].device_id = "dev-2", c[1].cred_hash = h2, c[1].n_seq = 3;
    c[2].device_id = "dev-1", c[2].cred_hash = h1; /* the same device again */
    c[3].device_id = "dev-3", c[3].cred_hash = wrong;
    c[4].device_id = "ghost", c[4].cred_hash = h1;
    c[5].device_id = "dev-3", c[5].cred_hash = h3, c[5].hint = NULL; /* reads its pins */
    c[6].device_id = "dev-2", c[6].cred_hash = wrong; /* dev-2 again, another credential */
    batched = mf_pg__checkin_batched();
    assert_int_equal(s->ops->checkin->checkin_begin(s, c, 7),
                     MF_E_AUTH); /* the first error: c[3] */
    /* On PostgreSQL the five the hint allows went in one statement, dev-1's two in its one
     * row (the others alone). */
    assert_int_equal(mf_pg__checkin_batched() - batched, f->pg ? 5 : 0);
    assert_int_equal(c[0].err, MF_OK);
    assert_int_equal(c[1].err, MF_OK);
    assert_int_equal(c[2].err, MF_OK);
    assert_int_equal(c[3].err, MF_E_AUTH);
    assert_non_null(strstr(mf_ctx__errmsg(&ctxs[3]), "dev-3"));
    assert_int_equal(c[4].err, MF_E_AUTH);
    assert_int_equal(c[5].err, MF_OK);
    assert_int_equal(c[6].err, MF_E_AUTH);
    for (size_t i = 0; i < 7; i++) {
        if (c[i].err == MF_OK)
            assert_int_equal(c[i].generation, g0);
    }
    /* dev-1: two blocks of one that do not overlap, in batch order; dev-2 a block of three. */
    assert_true(c[0].first < c[2].first);
    assert_true(c[0].first >= 1 && c[2].first >= 1);
    assert_true(c[1].first >= 1);
    assert_int_equal(s->ops->checkin->device_reserve_sequence(&first, s, &f->ctx, "dev-2", 1),
                     MF_OK);
    assert_true(first >= c[1].first + 3);
    assert_string_equal(dirs[1].channel, "beta");
    assert_string_equal(dirs[1].device_pin, "");
    /* The refused check-in wrote nothing: dev-3's last_seen is its own good one's. */
    assert_int_equal(last_seen_of(f, "dev-3"), 105);
    assert_int_equal(last_seen_of(f, "dev-2"), 101);
    assert_int_equal(last_seen_of(f, "dev-1") == 100 || last_seen_of(f, "dev-1") == 102, 1);

    /* A pin set since raises the generation: the stale hint is not trusted, pins are read. */
    assert_int_equal(s->ops->director->pin_set(s, &f->ctx, &pin), MF_OK);
    c[3].cred_hash = h3;
    assert_int_equal(s->ops->checkin->checkin_begin(s, c, 4), MF_OK);
    assert_true(c[0].generation > g0);
    expect_v9_batch(dirs);

    /* Check-ins whose pins must be read (the hint names the model pinned, or no hint) share
     * the statement too on PostgreSQL, each model's directives read for its device: dev-1
     * twice (one row, two blocks), dev-2 without a hint, dev-3 with a current hint. */
    {
        struct mf_store_pin_hint pinned = {c[0].generation, 0}, fresh = {c[0].generation, 1};

        c[0].hint = &pinned;
        c[1].hint = NULL;
        c[2].hint = NULL;
        c[3].hint = &fresh;
        batched = mf_pg__checkin_batched();
        assert_int_equal(s->ops->checkin->checkin_begin(s, c, 4), MF_OK);
        assert_int_equal(mf_pg__checkin_batched() - batched, f->pg ? 4 : 0);
        expect_v9_batch(dirs);
        assert_string_equal(dirs[3].device_pin, "");
        assert_string_equal(dirs[3].channel, "stable");
        assert_true(c[0].first < c[2].first);
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(c[i].generation, c[0].generation);
    }
}

/* A hint (store.h) skips the pin reads of the models it names unpinned only while the
 * store is at the hint's generation: those directives are then empty but for the channel,
 * and a pin set since (which raises the generation) is read whatever the hint says. */
static void test_server_store__checkin_begin_pin_hint(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    static const char *const models[] = {"det", "cls"};
    struct mf_store_pin pin = {MF_STORE_PIN_FLEET, "*", "cls", "v2", 1};
    struct mf_store_directives dirs[2];
    struct mf_store_pin_hint hint = {0, 3}; /* both models named unpinned */
    uint64_t g = 0, first = 0;

    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", dev1_hash, 1), MF_OK);
    assert_int_equal(s->ops->director->device_channel_set(s, &f->ctx, "dev-1", "beta"), MF_OK);
    assert_int_equal(s->ops->director->pin_set(s, &f->ctx, &pin), MF_OK);
    /* A hint of another generation than the store's: ignored, the pin is read. */
    hint.generation = generation(f, s) - 1;
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", dev1_hash, 2,
                                             models, 2, 5, &hint),
                     MF_OK);
    assert_string_equal(dirs[1].fleet_rollback, "v2");
    assert_string_equal(dirs[1].channel, "beta");
    /* A hint that leaves a model out: that model's pins are read. */
    hint.generation = g;
    hint.unpinned = 1; /* det */
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", dev1_hash, 2,
                                             models, 2, 6, &hint),
                     MF_OK);
    assert_string_equal(dirs[1].fleet_rollback, "v2");
    assert_string_equal(dirs[0].fleet_rollback, "");
    /* At its generation: the models it names unpinned read as having no pins (here even
     * the one that has, which shows the read was skipped), with the device's channel. */
    hint.unpinned = 3;
    memset(dirs, 0x5a, sizeof(dirs));
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", dev1_hash, 2,
                                             models, 2, 6, &hint),
                     MF_OK);
    assert_int_equal(g, hint.generation);
    expect_unpinned(&dirs[1], "beta");
    assert_string_equal(dirs[0].fleet_rollback, "");
    assert_string_equal(dirs[0].channel, "beta");
    /* A pin set since raises the generation: the same hint no longer applies. */
    (void)snprintf(pin.version, sizeof(pin.version), "v3");
    assert_int_equal(s->ops->director->pin_set(s, &f->ctx, &pin), MF_OK);
    assert_int_equal(mf_store__checkin_begin(&g, &first, dirs, s, &f->ctx, "dev-1", dev1_hash, 2,
                                             models, 2, 7, &hint),
                     MF_OK);
    assert_true(g > hint.generation);
    assert_string_equal(dirs[1].fleet_rollback, "v3");
}

static void test_server_store__report_unknown_device(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_status st;

    memset(&st, 0, sizeof(st));
    (void)snprintf(st.device_id, sizeof(st.device_id), "ghost");
    (void)snprintf(st.model, sizeof(st.model), "det");
    (void)snprintf(st.status, sizeof(st.status), "installed");
    assert_int_equal(s->ops->devices->report_insert(s, &f->ctx, &st), MF_E_NOTFOUND);
}

/* One report of `model` by `dev`: `version` (its sha256 derived from it) with `status`. */
static void report(struct store_fixture *f, struct mf_store *s, const char *dev,
                   const char *version, const char *status, const char *detail)
{
    store_fixture_report(s, &f->ctx, dev, "det", version, status, detail);
}

struct running_seen {
    char version[2][MF_STORE_NAME_SIZE], running[2][MF_STORE_NAME_SIZE];
    int n;
};

static int keep_running(void *payload, const struct mf_store_status *st)
{
    struct running_seen *w = payload;

    assert_true(w->n < 2);
    (void)snprintf(w->version[w->n], sizeof(w->version[0]), "%s", st->version);
    (void)snprintf(w->running[w->n], sizeof(w->running[0]), "%s", st->running_version);
    w->n++;
    return MF_OK;
}

/* statuses_list's running_version after each report of dev-1 (and dev-2, which never
 * installed anything). */
static void expect_running(struct store_fixture *f, struct mf_store *s, const char *want,
                           const char *why)
{
    struct running_seen w;

    memset(&w, 0, sizeof(w));
    assert_int_equal(s->ops->devices->statuses_list(s, &f->ctx, keep_running, &w), MF_OK);
    assert_int_equal(w.n, 2);
    if (strcmp(w.running[0], want) != 0)
        fail_msg("%s: dev-1 last reported %s, runs '%s', want '%s'", why, w.version[0],
                 w.running[0], want);
    assert_string_equal(w.running[1], "");
}

static void test_server_store__statuses_show_what_runs(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    uint8_t hash[MF_SHA256_LEN];

    memset(hash, 1, sizeof(hash));
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-1", hash, 1), MF_OK);
    memset(hash, 2, sizeof(hash));
    assert_int_equal(s->ops->auth->device_enroll(s, &f->ctx, "dev-2", hash, 1), MF_OK);
    report(f, s, "dev-2", "c1", "failed", "download failed");
    report(f, s, "dev-1", "c1", "installed", "");
    expect_running(f, s, "c1", "installed");
    report(f, s, "dev-1", "c2", "installed", "");
    report(f, s, "dev-1", "c2", "failed", "rolled back: manual rollback");
    expect_running(f, s, "c1", "rolled back from c2");
    report(f, s, "dev-1", "c3", "installed", "");
    expect_running(f, s, "c3", "c3 installed");
    /* Back from c3 to c1 (c2 was abandoned before: never what it runs again). */
    report(f, s, "dev-1", "c3", "failed", "rolled back: health check failed");
    expect_running(f, s, "c1", "rolled back from c3");
    report(f, s, "dev-1", "c4", "failed", "sha256 mismatch");
    expect_running(f, s, "c1", "c4 failed to install");
}

static void read_file(char *out, size_t size, const char *path, mode_t *mode)
{
    struct stat st;
    FILE *fp = fopen(path, "r");
    size_t n;

    assert_non_null(fp);
    n = fread(out, 1, size - 1, fp);
    out[n] = '\0';
    (void)fclose(fp);
    assert_int_equal(stat(path, &st), 0);
    *mode = st.st_mode & 0777;
}

static void test_server_store__init_data_dir_idempotent(void **state)
{
    struct store_fixture *f = *state;
    char data[128], path[160], admin1[128], admin2[128], enroll[128];
    uint8_t hash[MF_SHA256_LEN];
    mode_t mode;
    int changed = -1;

    assert_false(f->pg); /* init makes a SQLite store in the data directory */
    (void)snprintf(data, sizeof(data), "%s/data", f->dir);
    assert_int_equal(mf_server__init_data_dir(&changed, &f->ctx, data, NULL), MF_OK);
    assert_int_equal(changed, 1);
    (void)snprintf(path, sizeof(path), "%s/admin.token", data);
    read_file(admin1, sizeof(admin1), path, &mode);
    assert_int_equal(mode, 0600);
    assert_int_equal(strlen(admin1), MF_TOKEN_LEN + 1);
    assert_int_equal(admin1[MF_TOKEN_LEN], '\n');
    assert_int_equal(mf_token__kind(admin1, MF_TOKEN_LEN), MF_TOKEN_ADMIN);
    (void)snprintf(path, sizeof(path), "%s/enroll.token", data);
    read_file(enroll, sizeof(enroll), path, &mode);
    assert_int_equal(mode, 0600);
    assert_int_equal(mf_token__kind(enroll, MF_TOKEN_LEN), MF_TOKEN_ENROLL);

    /* Second run: nothing changes, the token is not rotated. */
    assert_int_equal(mf_server__init_data_dir(&changed, &f->ctx, data, NULL), MF_OK);
    assert_int_equal(changed, 0);
    (void)snprintf(path, sizeof(path), "%s/admin.token", data);
    read_file(admin2, sizeof(admin2), path, &mode);
    assert_string_equal(admin1, admin2);

    /* The store knows the token only by its hash, and accepts it. */
    (void)snprintf(path, sizeof(path), "%s/store.db", data);
    assert_int_equal(mf_store__open(&f->s, &f->ctx, path, 0), MF_OK);
    mf_token__hash(hash, admin1, MF_TOKEN_LEN);
    assert_int_equal(f->s->ops->auth->token_check(f->s, &f->ctx, MF_TOKEN_ADMIN, hash), MF_OK);
    mf_token__hash(hash, enroll, MF_TOKEN_LEN);
    assert_int_equal(f->s->ops->auth->token_check(f->s, &f->ctx, MF_TOKEN_ENROLL, hash), MF_OK);
    (void)snprintf(path, sizeof(path), "%s/blobs/tmp", data);
    assert_int_equal(access(path, W_OK), 0);
    /* The online director key: private 0600, its public half for the keys document. */
    (void)snprintf(path, sizeof(path), "%s/director.key", data);
    read_file(admin2, sizeof(admin2), path, &mode);
    assert_int_equal(mode, 0600);
    assert_non_null(strstr(admin2, "PRIVATE KEY"));
    (void)snprintf(path, sizeof(path), "%s/director.pub.pem", data);
    read_file(admin2, sizeof(admin2), path, &mode);
    assert_non_null(strstr(admin2, "PUBLIC KEY"));
}

STORE_FIXTURE_COLLECTOR(delta_rows, struct mf_store_delta, 4, collect_delta)

/* deltas_list: a model's deltas newest first, at most `max`, none of another model's. */
static void test_server_store__deltas_list(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    struct mf_store_delta d = {.model = "det", .size = 5, .format = "mfdelta", .created_at = 10};
    struct delta_rows got = {0};

    memset(d.from_sha256, 'a', MF_SHA256_HEX_LEN);
    memset(d.delta_sha256, 'd', MF_SHA256_HEX_LEN);
    for (int i = 0; i < 3; i++) {
        memset(d.to_sha256, 'b' + i, MF_SHA256_HEX_LEN);
        d.size = 100 + (uint64_t)i;
        d.created_at = 10 + i;
        assert_int_equal(s->ops->registry->delta_insert(s, &f->ctx, &d), MF_OK);
    }
    (void)snprintf(d.model, sizeof(d.model), "cls");
    memset(d.to_sha256, 'f', MF_SHA256_HEX_LEN);
    assert_int_equal(s->ops->registry->delta_insert(s, &f->ctx, &d), MF_OK);
    assert_int_equal(s->ops->registry->deltas_list(s, &f->ctx, "det", 2, collect_delta, &got),
                     MF_OK);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.v[0].model, "det");
    assert_int_equal(got.v[0].created_at, 12);
    assert_int_equal(got.v[0].size, 102);
    assert_int_equal(got.v[0].to_sha256[0], 'd');
    assert_int_equal(got.v[1].created_at, 11);
    assert_string_equal(got.v[1].format, "mfdelta");
    assert_int_equal(got.v[1].from_sha256[0], 'a');
    got.n = 0;
    assert_int_equal(s->ops->registry->deltas_list(s, &f->ctx, "none", 9, collect_delta, &got),
                     MF_OK);
    assert_int_equal(got.n, 0);
}

STORE_FIXTURE_COLLECTOR(tele_rows, struct mf_store_telemetry, 4, collect_tele)

/* telemetry_device: one device's reports of a model by version, no other device's or
 * model's. */
static void test_server_store__telemetry_device(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = open_migrated(f);
    const struct mf_store_telemetry rows[] = {{"dev-1", "det", "v2", "{\"n\":2}", 20, ""},
                                              {"dev-1", "det", "v1", "{\"n\":1}", 10, ""},
                                              {"dev-2", "det", "v1", "{\"n\":3}", 30, ""},
                                              {"dev-1", "cls", "v1", "{\"n\":4}", 40, ""}};
    struct tele_rows got = {0};

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        assert_int_equal(s->ops->rollout->telemetry_put(s, &f->ctx, &rows[i]), MF_OK);
    assert_int_equal(
        s->ops->rollout->telemetry_device(s, &f->ctx, "det", "dev-1", collect_tele, &got), MF_OK);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.v[0].version, "v1");
    assert_int_equal(got.v[0].reported_at, 10);
    assert_string_equal(got.v[1].version, "v2");
    assert_string_equal(got.v[1].device_id, "dev-1");
    got.n = 0;
    assert_int_equal(
        s->ops->rollout->telemetry_device(s, &f->ctx, "det", "dev-9", collect_tele, &got), MF_OK);
    assert_int_equal(got.n, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, store_setup, store_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_server_store__migrate_empty_then_idempotent),
        T(test_server_store__tokens_by_hash),
        T(test_server_store__device_reenroll_revokes),
        T(test_server_store__versions),
        T(test_server_store__deltas_list),
        T(test_server_store__telemetry_device),
        T(test_server_store__releases),
        T(test_server_store__variants),
        T(test_server_store__trust_docs_and_sequence),
        T(test_server_store__statuses_show_what_runs),
        T(test_server_store__report_unknown_device),
        T(test_server_store__sequence_above_all_after_restart),
        T(test_server_store__generation_follows_cached_tables),
        T(test_server_store__group_settings),
        T(test_server_store__checkin_begin),
        T(test_server_store__checkin_begin_pin_hint),
        T(test_server_store__checkin_begin_batch),
    };
    const struct CMUnitTest sqlite_only[] = {
        T(test_server_store__open_errors),
        T(test_server_store__init_data_dir_idempotent),
    };
#undef T

    return mf_test__run_group("server_store", tests, MF_TEST_COUNT(tests), sqlite_only,
                              MF_TEST_COUNT(sqlite_only), !mf_pgtest__enabled(), NULL, NULL);
}
