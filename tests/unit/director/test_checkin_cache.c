/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-node check-in cache (director/checkin_cache.h) over a SQLite store: what it keeps
 * is served while the store generation stays the same, and never once the generation moved,
 * so a change committed anywhere reaches the next check-in that read the new generation.
 */
#include "mf_test.h"
#include "store_fixture.h"
#include "director/checkin_cache.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The SQLite store (migrated, with dev-1, det v1 released and keys-1) and its cache. */
struct cache_fixture {
    struct store_fixture *st;
    struct mf_ccache *c;
};

static int cache_setup(void **state)
{
    struct cache_fixture *f = calloc(1, sizeof(*f));
    struct mf_store_version v = {"det", "v1", "", 10, 100, 1, 0, "", 0, ""};
    uint8_t hash[MF_SHA256_LEN] = {1};

    assert_non_null(f);
    f->st = store_fixture_new_on("ccache", 1, 0);
    assert_int_equal(f->st->s->ops->auth->device_enroll(f->st->s, &f->st->ctx, "dev-1", hash, 1),
                     MF_OK);
    memset(v.sha256, 'a', MF_SHA256_HEX_LEN);
    memset(v.release_digest, 'b', MF_SHA256_HEX_LEN);
    assert_int_equal(f->st->s->ops->registry->version_insert(f->st->s, &f->st->ctx, &v), MF_OK);
    assert_int_equal(
        f->st->s->ops->registry->release_set(f->st->s, &f->st->ctx, &v, "{\"r\":1}", 7), MF_OK);
    assert_int_equal(f->st->s->ops->registry->trust_put(f->st->s, &f->st->ctx, MF_STORE_TRUST_KEYS,
                                                        1, "keys-1", 6),
                     MF_OK);
    assert_int_equal(mf_ccache__new(&f->c, &f->st->ctx), MF_OK);
    *state = f;
    return 0;
}

static int cache_teardown(void **state)
{
    struct cache_fixture *f = *state;

    mf_ccache__free(f->c);
    store_fixture_free(f->st);
    free(f);
    return 0;
}

/* The generation a check-in would read now. */
static struct mf_ccache_view view_now(struct cache_fixture *f)
{
    static const uint8_t hash[MF_SHA256_LEN] = {1};
    struct mf_ccache_view v = {f->c, f->st->s, &f->st->ctx, 0};
    uint64_t first = 0;

    assert_int_equal(mf_store__checkin_begin(&v.generation, &first, NULL, f->st->s, &f->st->ctx,
                                             "dev-1", hash, 0, NULL, 0, 1, NULL),
                     MF_OK);
    return v;
}

static void expect_stats(struct mf_ccache *c, uint64_t hits, uint64_t misses)
{
    uint64_t h = 0, m = 0;

    mf_ccache__stats(&h, &m, c);
    assert_int_equal(h, hits);
    assert_int_equal(m, misses);
}

/* Kept values are served while the generation holds: the second read of each is a hit. */
/* `env` holds `want` (NUL-terminated); it is freed for the next read. */
static void expect_text(struct mf_dynbuf *env, const char *want)
{
    assert_string_equal((const char *)env->data, want);
    mf_dynbuf__free(env);
}

static void test_checkin_cache__serves_kept_values(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v = view_now(f);
    struct mf_store_version got;
    struct mf_dynbuf env;
    uint64_t kv = 0;

    assert_int_equal(mf_ccache__promoted_latest(&got, &v, "det"), MF_OK);
    assert_string_equal(got.version, "v1");
    assert_int_equal(mf_ccache__promoted_latest(&got, &v, "det"), MF_OK);
    assert_int_equal(mf_ccache__trust_latest(&kv, &env, &v, MF_STORE_TRUST_KEYS), MF_OK);
    assert_int_equal(kv, 1);
    expect_text(&env, "keys-1");
    assert_int_equal(mf_ccache__trust_latest(&kv, &env, &v, MF_STORE_TRUST_KEYS), MF_OK);
    expect_text(&env, "keys-1");
    assert_int_equal(mf_ccache__release_get(&env, &v, "det", "v1"), MF_OK);
    expect_text(&env, "{\"r\":1}");
    expect_stats(f->c, 2, 3);
    /* A later check-in that read the same generation gets the same answers from the cache. */
    v = view_now(f);
    assert_int_equal(mf_ccache__release_get(&env, &v, "det", "v1"), MF_OK);
    mf_dynbuf__free(&env);
    expect_stats(f->c, 3, 3);
    /* The answer's form of the envelope: a JSON string literal, kept like the rest (a miss
     * that reads the envelope through the cache, a hit, then one hit). */
    mf_dynbuf__init(&env, NULL, 1024);
    assert_int_equal(mf_dynbuf__append(&env, "x:", 2), MF_OK); /* it appends */
    assert_int_equal(mf_ccache__release_json(&env, &v, "det", "v1"), MF_OK);
    assert_string_equal((const char *)env.data, "x:\"{\\\"r\\\":1}\"");
    mf_dynbuf__reset(&env);
    assert_int_equal(mf_ccache__release_json(&env, &v, "det", "v1"), MF_OK);
    expect_text(&env, "\"{\\\"r\\\":1}\"");
    expect_stats(f->c, 5, 4);
}

/* "Not there" is kept too, with the store's message, and dropped with the generation. */
static void test_checkin_cache__notfound_until_the_generation_moves(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v = view_now(f);
    struct mf_store_version w = {"det", "v2", "", 20, 200, 2, 1, "", 0, ""}, got;

    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "v2"), MF_E_NOTFOUND);
    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "v2"), MF_E_NOTFOUND);
    assert_non_null(strstr(mf_ctx__errmsg(&f->st->ctx), "det")); /* the store's message */
    expect_stats(f->c, 1, 1);
    memset(w.sha256, 'c', MF_SHA256_HEX_LEN);
    memset(w.release_digest, 'd', MF_SHA256_HEX_LEN);
    assert_int_equal(f->st->s->ops->registry->version_insert(f->st->s, &f->st->ctx, &w), MF_OK);
    assert_int_equal(
        f->st->s->ops->registry->release_set(f->st->s, &f->st->ctx, &w, "{\"r\":2}", 7), MF_OK);
    /* A check-in that read the generation before the change may still see the old answer;
     * one that read it after sees the change at once. */
    v = view_now(f);
    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "v2"), MF_OK);
    assert_int_equal(got.size, 20);
    /* Published is not deployed: the channel default stays on the promoted v1 ... */
    assert_int_equal(mf_ccache__promoted_latest(&got, &v, "det"), MF_OK);
    assert_string_equal(got.version, "v1");
    /* ... until v2 is promoted, which moves the generation like any release change. */
    assert_int_equal(f->st->s->ops->registry->release_promote(f->st->s, &f->st->ctx, "det", "v2"),
                     MF_OK);
    v = view_now(f);
    assert_int_equal(mf_ccache__promoted_latest(&got, &v, "det"), MF_OK);
    assert_string_equal(got.version, "v2");
}

/* Whether a model has pins is kept like the rest, and the hint for the next checkin_begin
 * names only the models known unpinned at the cache's generation: none before anything is
 * known, none once a pin moved the generation, until a check-in learns it again. */
static void test_checkin_cache__pin_hint(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v = view_now(f);
    static const char *const models[] = {"det", "cls", "seg"};
    struct mf_store_pin pin = {MF_STORE_PIN_GROUP, "lab", "cls", "v1", 1};
    struct mf_store_pin_hint hint;
    int pinned = -1;

    mf_ccache__pin_hint(&hint, NULL, models, 3);
    assert_int_equal(hint.unpinned, 0); /* no cache: nothing known */
    assert_int_equal(f->st->s->ops->director->pin_set(f->st->s, &f->st->ctx, &pin), MF_OK);
    v = view_now(f);
    mf_ccache__pin_hint(&hint, f->c, models, 3);
    assert_int_equal(hint.unpinned, 0);
    assert_int_equal(mf_ccache__pinned(&pinned, &v, "det"), MF_OK);
    assert_int_equal(pinned, 0);
    assert_int_equal(mf_ccache__pinned(&pinned, &v, "cls"), MF_OK);
    assert_int_equal(pinned, 1);
    assert_int_equal(mf_ccache__pinned(&pinned, &v, "det"), MF_OK); /* kept */
    expect_stats(f->c, 1, 2);
    mf_ccache__pin_hint(&hint, f->c, models, 3);
    assert_int_equal(hint.generation, v.generation);
    assert_int_equal(hint.unpinned, 1); /* det only: cls has a pin, seg is not known */
    /* A pin on det moves the generation; the next check-in's view drops what was known. */
    (void)snprintf(pin.model, sizeof(pin.model), "det");
    assert_int_equal(f->st->s->ops->director->pin_set(f->st->s, &f->st->ctx, &pin), MF_OK);
    v = view_now(f);
    assert_true(v.generation > hint.generation);
    assert_int_equal(mf_ccache__pinned(&pinned, &v, "det"), MF_OK);
    assert_int_equal(pinned, 1);
    mf_ccache__pin_hint(&hint, f->c, models, 3);
    assert_int_equal(hint.generation, v.generation);
    assert_int_equal(hint.unpinned, 0);
}

/* Every cached table moves the generation, so each kind of value follows its table. */
static void test_checkin_cache__each_kind_follows_its_table(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v = view_now(f), old;
    struct mf_store_delta d = {.model = "det", .size = 5, .format = "mfdelta", .created_at = 1};
    struct mf_store_rollout r = {
        .model = "det", .version = "v1", .prev_version = "v0", .state = "running", .plan = "{}"};
    struct mf_store_rollout gotr;
    struct mf_store_delta gotd;
    char from[MF_SHA256_HEX_LEN + 1], to[MF_SHA256_HEX_LEN + 1];
    struct mf_dynbuf env;
    uint64_t kv = 0;

    memset(from, 'a', MF_SHA256_HEX_LEN);
    memset(to, 'e', MF_SHA256_HEX_LEN);
    from[MF_SHA256_HEX_LEN] = to[MF_SHA256_HEX_LEN] = '\0';
    assert_int_equal(mf_ccache__delta_find(&gotd, &v, from, to), MF_E_NOTFOUND);
    assert_int_equal(mf_ccache__rollout_newest(&gotr, &v, "det"), MF_E_NOTFOUND);
    assert_int_equal(mf_ccache__trust_latest(&kv, &env, &v, MF_STORE_TRUST_ROOT), MF_E_NOTFOUND);
    mf_dynbuf__free(&env);
    old = v;
    (void)snprintf(d.from_sha256, sizeof(d.from_sha256), "%s", from);
    (void)snprintf(d.to_sha256, sizeof(d.to_sha256), "%s", to);
    memset(d.delta_sha256, 'f', MF_SHA256_HEX_LEN);
    assert_int_equal(f->st->s->ops->registry->delta_insert(f->st->s, &f->st->ctx, &d), MF_OK);
    assert_int_equal(f->st->s->ops->rollout->rollout_put(f->st->s, &f->st->ctx, &r, ""), MF_OK);
    assert_int_equal(f->st->s->ops->registry->trust_put(f->st->s, &f->st->ctx, MF_STORE_TRUST_ROOT,
                                                        1, "root-1", 6),
                     MF_OK);
    v = view_now(f);
    assert_true(v.generation > old.generation);
    assert_int_equal(mf_ccache__delta_find(&gotd, &v, from, to), MF_OK);
    assert_int_equal(gotd.size, 5);
    assert_int_equal(mf_ccache__rollout_newest(&gotr, &v, "det"), MF_OK);
    assert_int_equal(gotr.id, r.id);
    assert_int_equal(mf_ccache__trust_latest(&kv, &env, &v, MF_STORE_TRUST_ROOT), MF_OK);
    assert_string_equal((const char *)env.data, "root-1");
    mf_dynbuf__free(&env);
    /* A check-in still holding the older generation reads the store (and keeps nothing in
     * the cache, which is at the newer one). */
    assert_int_equal(mf_ccache__delta_find(&gotd, &old, from, to), MF_OK);
}

/* Roots come back in order with their exact bytes, from the store and from the cache. */
static int collect_root(void *payload, uint64_t version, const void *env, size_t len)
{
    char *seen = payload;
    size_t n = strlen(seen);

    (void)snprintf(seen + n, 64 - n, "%llu:%.*s;", (unsigned long long)version, (int)len,
                   (const char *)env);
    return MF_OK;
}

static void test_checkin_cache__roots_after(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v, direct;
    char seen[64] = "";

    for (uint64_t i = 1; i <= 3; i++) {
        char doc[8];

        (void)snprintf(doc, sizeof(doc), "r%llu", (unsigned long long)i);
        assert_int_equal(f->st->s->ops->registry->trust_put(f->st->s, &f->st->ctx,
                                                            MF_STORE_TRUST_ROOT, i, doc, 2),
                         MF_OK);
    }
    v = view_now(f);
    direct = v;
    direct.c = NULL;
    assert_int_equal(mf_ccache__trust_roots_after(&direct, 1, 16, collect_root, seen), MF_OK);
    assert_string_equal(seen, "2:r2;3:r3;");
    for (int i = 0; i < 2; i++) {
        seen[0] = '\0';
        assert_int_equal(mf_ccache__trust_roots_after(&v, 1, 16, collect_root, seen), MF_OK);
        assert_string_equal(seen, "2:r2;3:r3;");
    }
    expect_stats(f->c, 1, 1);
}

/* Past MF_CCACHE_MAX_ENTRIES the cache starts over instead of growing: answers stay right. */
static void test_checkin_cache__bounded(void **state)
{
    struct cache_fixture *f = *state;
    struct mf_ccache_view v = view_now(f);
    struct mf_store_version got;
    uint64_t hits = 0, misses = 0;
    char name[32];

    for (int i = 0; i <= MF_CCACHE_MAX_ENTRIES; i++) {
        (void)snprintf(name, sizeof(name), "gone-%d", i);
        assert_int_equal(mf_ccache__version_get(&got, &v, "det", name), MF_E_NOTFOUND);
    }
    /* The first ones were dropped when the cache filled: asked again, they are misses. */
    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "gone-0"), MF_E_NOTFOUND);
    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "v1"), MF_OK);
    assert_int_equal(got.size, 10);
    mf_ccache__stats(&hits, &misses, f->c);
    assert_int_equal(hits, 0);
    assert_int_equal(misses, MF_CCACHE_MAX_ENTRIES + 3);
    /* And what was kept after the restart is served. */
    assert_int_equal(mf_ccache__version_get(&got, &v, "det", "v1"), MF_OK);
    mf_ccache__stats(&hits, &misses, f->c);
    assert_int_equal(hits, 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, cache_setup, cache_teardown)
    const struct CMUnitTest tests[] = {
        T(test_checkin_cache__serves_kept_values),
        T(test_checkin_cache__notfound_until_the_generation_moves),
        T(test_checkin_cache__each_kind_follows_its_table),
        T(test_checkin_cache__roots_after),
        T(test_checkin_cache__bounded),
        T(test_checkin_cache__pin_hint),
    };
#undef T

    return cmocka_run_group_tests_name("checkin_cache", tests, NULL, NULL);
}
