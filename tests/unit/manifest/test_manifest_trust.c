/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rules of the device trust state (issue 4, DESIGN.md section 3), one table row or test per
 * rule, each checking the mf_err and the mf_trust_reason so a row fails if its rule is
 * removed. Also: root rotation, keys updates, saved state, and allocation failure at every N.
 */
#include "manifest_world.h"
#include "kit_alloc.h"
#include "manifest_common.h"

#include <cjson/cJSON.h>
#include <string.h>

/* ---- envelope surgery ------------------------------------------------------------------ */

/* Envelope `a` with the signatures of envelope `b`. */
static uint8_t *splice(size_t *len, const uint8_t *a, const uint8_t *b)
{
    const char *pa = strstr((const char *)a, "\"signatures\"");
    const char *pb = strstr((const char *)b, "\"signatures\"");
    size_t na = (size_t)(pa - (const char *)a), nb = strlen(pb);
    uint8_t *out = mf_alloc(NULL, na + nb + 1);

    memcpy(out, a, na);
    memcpy(out + na, pb, nb + 1);
    *len = na + nb;
    return out;
}

static uint8_t *strip_sigs(size_t *len, const uint8_t *a)
{
    const char *pa = strstr((const char *)a, "\"signatures\"");
    size_t na = (size_t)(pa - (const char *)a);
    uint8_t *out = mf_alloc(NULL, na + 20);

    memcpy(out, a, na);
    memcpy(out + na, "\"signatures\":[]}", 17);
    *len = na + 16;
    return out;
}

/* Decoded payload of an envelope, NUL-terminated. */
static char *payload_of(const uint8_t *env)
{
    const char *p = strstr((const char *)env, "\"payload\":\"") + 11;
    size_t n = (size_t)(strchr(p, '"') - p), out_len;
    char *out = mf_alloc(NULL, n + 1);

    assert_int_equal(mf_base64__decode((uint8_t *)out, n, &out_len, p, n), MF_OK);
    out[out_len] = 0;
    return out;
}

/* Replaces every occurrence of `from` by `to` (same length) in s. */
static void replace_all(char *s, const char *from, const char *to)
{
    size_t n = strlen(from);

    assert_int_equal(n, strlen(to));
    for (char *p = strstr(s, from); p; p = strstr(p + n, from))
        memcpy(p, to, n);
}

/* ---- release rules --------------------------------------------------------------------- */

static uint8_t *rel_ok(size_t *len, mf_trust *t)
{
    mf_manifest_release_spec spec;

    (void)t;
    fx_release_spec(&spec, "v2", 2, 1);
    return fx_release(len, &world, &spec, BY(K_REL0));
}

static uint8_t *rel_by(size_t *len, const int *by)
{
    mf_manifest_release_spec spec;

    fx_release_spec(&spec, "v2", 2, 1);
    return fx_release(len, &world, &spec, by);
}

static uint8_t *rel_unsigned(size_t *len, mf_trust *t)
{
    uint8_t *env = rel_ok(len, t), *out = strip_sigs(len, env);

    mf_free(NULL, env);
    return out;
}

static uint8_t *rel_sig_of_other_doc(size_t *len, mf_trust *t)
{
    mf_manifest_release_spec spec;
    uint8_t *a = rel_ok(len, t), *b, *out;

    fx_release_spec(&spec, "v3", 3, 1);
    b = fx_release(len, &world, &spec, BY(K_REL0));
    out = splice(len, a, b);
    mf_free(NULL, a);
    mf_free(NULL, b);
    return out;
}

static uint8_t *rel_unknown_key(size_t *len, mf_trust *t)
{
    (void)t;
    return rel_by(len, BY(K_EVIL));
}

static uint8_t *rel_by_director(size_t *len, mf_trust *t)
{
    (void)t;
    return rel_by(len, BY(K_DIR));
}

static uint8_t *rel_by_root(size_t *len, mf_trust *t)
{
    (void)t;
    return rel_by(len, BY(K_ROOT0, K_ROOT1, K_ROOT2));
}

static void set_keys(mf_trust *t, uint8_t *keys, const size_t *kl, uint64_t now)
{
    if (mf_trust_update_keys(t, keys, *kl, now) < 0)
        fail_msg("set_keys: %s", mf_trust_errmsg(t));
    mf_free(NULL, keys);
}

static uint8_t *rel_revoked_key(size_t *len, mf_trust *t)
{
    size_t kl;

    /* keys v2 drops REL1 */
    set_keys(t, fx_keys(&kl, &world, 2, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS)), &kl,
             FX_NOW);
    return rel_by(len, BY(K_REL1));
}

static void threshold_two(mf_trust *t)
{
    size_t kl;

    set_keys(t,
             fx_keys(&kl, &world, 2, FX_EXPIRES, BY(K_REL0, K_REL1), 2, BY(K_DIR), 1, BY(K_KEYS)),
             &kl, FX_NOW);
}

static uint8_t *rel_below_threshold(size_t *len, mf_trust *t)
{
    threshold_two(t);
    return rel_by(len, BY(K_REL0, K_EVIL));
}

static uint8_t *rel_duplicate_sig(size_t *len, mf_trust *t)
{
    threshold_two(t);
    return rel_by(len, BY(K_REL0, K_REL0));
}

static uint8_t *rel_threshold_met(size_t *len, mf_trust *t)
{
    threshold_two(t);
    return rel_by(len, BY(K_REL1, K_REL0));
}

static uint8_t *rel_expired(size_t *len, mf_trust *t)
{
    mf_manifest_release_spec spec;

    (void)t;
    fx_release_spec(&spec, "v2", 2, 1);
    spec.created = FX_NOW - 100;
    spec.expires = FX_NOW - 1;
    return fx_release(len, &world, &spec, BY(K_REL0));
}

static uint8_t *rel_keys_expired(size_t *len, mf_trust *t)
{
    size_t kl;

    /* Accepted without trustworthy time, so only the release check can catch it. */
    set_keys(t, fx_keys(&kl, &world, 2, FX_NOW - 1, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS)), &kl,
             MF_TRUST_TIME_UNKNOWN);
    return rel_ok(len, t);
}

static void commit_floor(mf_trust *t, uint64_t floor)
{
    mf_manifest_release_spec spec;
    mf_manifest_release *r = NULL;
    uint8_t *env;
    size_t len;

    fx_release_spec(&spec, "v9", 9, floor);
    env = fx_release(&len, &world, &spec, BY(K_REL0));
    assert_int_equal(mf_trust_verify_release(&r, t, env, len, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_commit_release(t, r), MF_OK);
    mf_manifest_release_free(r);
    mf_free(NULL, env);
}

static uint8_t *rel_below_floor(size_t *len, mf_trust *t)
{
    commit_floor(t, 2); /* rel_ok carries floor 1 */
    return rel_ok(len, t);
}

static uint8_t *rel_older_at_floor(size_t *len, mf_trust *t)
{
    commit_floor(t, 1); /* v9 installed; v2 with the same floor is a legal rollback */
    return rel_ok(len, t);
}

static uint8_t *rel_wrong_type(size_t *len, mf_trust *t)
{
    (void)t;
    return fx_keys_v1(len, &world);
}

static uint8_t *rel_wrong_inner_type(size_t *len, mf_trust *t)
{
    uint8_t *env = rel_ok(len, t), *out;
    char *p = payload_of(env);

    /* Signed correctly, labelled as a release, but the document says assignment. */
    replace_all(p, "\"_type\":\"release\"", "\"_type\":\"relexse\"");
    out = fx_sign_raw(len, &world, MF_MANIFEST_TYPE_RELEASE, p, BY(K_REL0));
    mf_free(NULL, p);
    mf_free(NULL, env);
    return out;
}

struct rule_case {
    const char *name;
    uint8_t *(*make)(size_t *len, mf_trust *t);
    uint64_t now;
    int rc;
    mf_trust_reason reason;
};

static const struct rule_case release_cases[] = {
    {"valid", rel_ok, FX_NOW, MF_OK, MF_TRUST_R_NONE},
    {"valid without time", rel_ok, MF_TRUST_TIME_UNKNOWN, MF_OK, MF_TRUST_R_NONE},
    {"missing signature", rel_unsigned, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_NO_SIGNATURE},
    {"bad signature", rel_sig_of_other_doc, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_BAD_SIGNATURE},
    {"unknown key", rel_unknown_key, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"director key", rel_by_director, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"root keys", rel_by_root, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"revoked key", rel_revoked_key, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"too few signatures", rel_below_threshold, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_THRESHOLD},
    {"duplicate signature", rel_duplicate_sig, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_THRESHOLD},
    {"threshold met", rel_threshold_met, FX_NOW, MF_OK, MF_TRUST_R_NONE},
    {"expired release", rel_expired, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_EXPIRED},
    {"expired release, no time", rel_expired, MF_TRUST_TIME_UNKNOWN, MF_OK, MF_TRUST_R_NONE},
    {"expired keys", rel_keys_expired, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_EXPIRED},
    {"expired keys, no time", rel_keys_expired, MF_TRUST_TIME_UNKNOWN, MF_OK, MF_TRUST_R_NONE},
    {"below floor", rel_below_floor, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_BELOW_FLOOR},
    {"older at floor", rel_older_at_floor, FX_NOW, MF_OK, MF_TRUST_R_NONE},
    {"wrong payloadType", rel_wrong_type, FX_NOW, MF_E_SIGNATURE, MF_TRUST_R_WRONG_TYPE},
    {"wrong _type", rel_wrong_inner_type, FX_NOW, MF_E_INVALID, MF_TRUST_R_MALFORMED},
};

static void test_manifest_trust__release_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(release_cases) / sizeof(release_cases[0]); i++) {
        const struct rule_case *c = &release_cases[i];
        mf_trust *t = fx_trust(&world, NULL);
        mf_manifest_release *r = NULL;
        size_t len;
        uint8_t *env = c->make(&len, t);
        int rc = mf_trust_verify_release(&r, t, env, len, c->now);

        if (rc != c->rc || mf_trust_last_reason(t) != c->reason)
            fail_msg("case '%s': rc %d reason '%s' (%s)", c->name, rc,
                     mf_trust_reason_name(mf_trust_last_reason(t)), mf_trust_errmsg(t));
        assert_true(rc == MF_OK ? r != NULL : r == NULL);
        mf_manifest_release_free(r);
        mf_free(NULL, env);
        mf_trust_free(t);
    }
}

static void test_manifest_trust__release_fields(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);
    mf_manifest_release_spec spec;
    mf_manifest_release *r = NULL;
    mf_manifest_delta delta = {{7}, {8}, 12345};
    uint8_t digest[32];
    uint8_t *env;
    size_t len;

    (void)state;
    fx_release_spec(&spec, "v2.1-rc1", 42, 3);
    spec.deltas = &delta;
    spec.delta_count = 1;
    env = fx_release(&len, &world, &spec, BY(K_REL1));
    assert_int_equal(mf_trust_verify_release(&r, t, env, len, FX_NOW), MF_OK);
    assert_string_equal(r->name, FX_MODEL);
    assert_string_equal(r->version, "v2.1-rc1");
    assert_int_equal(r->sequence, 42);
    assert_memory_equal(r->sha256, spec.sha256, 32);
    assert_int_equal(r->size, spec.size);
    assert_int_equal(r->chunk_size, 4096);
    assert_int_equal(r->chunk_count, 3);
    assert_memory_equal(r->chunks, spec.chunks, 3 * 32);
    assert_int_equal(r->delta_count, 1);
    assert_memory_equal(&r->deltas[0], &delta, sizeof(delta));
    assert_int_equal(r->security_floor, 3);
    assert_int_equal(r->created, spec.created);
    assert_int_equal(r->expires, spec.expires);
    fx_digest(digest, env, len);
    assert_memory_equal(r->digest, digest, 32);
    /* verification alone does not move the floor; commit does, and only upwards */
    assert_int_equal(mf_trust_floor(t, FX_MODEL), 0);
    assert_int_equal(mf_trust_commit_release(t, r), MF_OK);
    assert_int_equal(mf_trust_floor(t, FX_MODEL), 3);
    mf_manifest_release_free(r);
    mf_free(NULL, env);
    mf_trust_free(t);
}

static void test_manifest_trust__size_limits(void **state)
{
    mf_trust_options o;
    mf_trust *t = NULL;
    mf_manifest_release *r = NULL;
    uint8_t *root, *keys, *rel;
    size_t rl, kl, ll;

    (void)state;
    root = fx_root_v1(&rl, &world);
    keys = fx_keys_v1(&kl, &world);
    rel = rel_ok(&ll, NULL);
    assert_int_equal(mf_trust_options_init(&o, MF_TRUST_OPTIONS_VERSION), MF_OK);
    assert_int_equal(mf_trust_options_init(&o, MF_TRUST_OPTIONS_VERSION + 1), MF_E_INVALID);
    o.max_root_bytes = rl - 1;
    o.max_release_bytes = ll - 1;
    o.max_chunks = 2;
    assert_int_equal(mf_trust_new(&t, &o, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_E_LIMIT);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_TOO_LARGE);
    mf_trust_free(t);
    o.max_root_bytes = rl;
    assert_int_equal(mf_trust_new(&t, &o, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_verify_release(&r, t, rel, ll, FX_NOW), MF_E_LIMIT);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_TOO_LARGE);
    mf_trust_free(t);
    o.max_release_bytes = ll; /* size passes; the 3 chunks exceed max_chunks 2 */
    assert_int_equal(mf_trust_new(&t, &o, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_verify_release(&r, t, rel, ll, FX_NOW), MF_E_LIMIT);
    assert_non_null(strstr(mf_trust_errmsg(t), "chunks"));
    assert_null(r);
    mf_trust_free(t);
    mf_free(NULL, root);
    mf_free(NULL, keys);
    mf_free(NULL, rel);
}

static void test_manifest_trust__needs_root_and_keys(void **state)
{
    mf_trust *t = NULL;
    mf_manifest_release *r = NULL;
    uint8_t *root, *keys, *rel;
    size_t rl, kl, ll;
    uint8_t buf[16];

    (void)state;
    root = fx_root_v1(&rl, &world);
    keys = fx_keys_v1(&kl, &world);
    rel = rel_ok(&ll, NULL);
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_update_keys(t, keys, kl, FX_NOW), MF_E_STATE);
    assert_int_equal(mf_trust_save(buf, sizeof(buf), &ll, t), MF_E_STATE);
    assert_int_equal(mf_trust_bootstrap(t, root, rl, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_verify_release(&r, t, rel, ll, FX_NOW), MF_E_STATE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_NO_KEYS);
    mf_trust_free(t);
    mf_trust_free(NULL);
    mf_manifest_release_free(NULL);
    mf_manifest_assignment_free(NULL);
    mf_free(NULL, root);
    mf_free(NULL, keys);
    mf_free(NULL, rel);
}

/* ---- assignment rules ------------------------------------------------------------------ */

struct asg_case {
    const char *name;
    const char *device; /* as the device knows itself */
    const char *nonce;  /* as the device sent it */
    const char *signed_device, *signed_model;
    uint64_t seq;
    const int *assignment_by;
    const int *release_by;
    int other_release; /* 1: assignment names a different release */
    uint64_t floor;    /* committed before (0: none); the release carries floor 1 */
    int rc;
    mf_trust_reason reason;
};

static const struct asg_case asg_cases[] = {
    {"valid", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0), 0, 0, MF_OK,
     MF_TRUST_R_NONE},
    {"wrong nonce", FX_DEVICE, "ffffffffffffffffffffffffffffffff", FX_DEVICE, FX_MODEL, 5,
     BY(K_DIR), BY(K_REL0), 0, 0, MF_E_SIGNATURE, MF_TRUST_R_WRONG_NONCE},
    {"nonce prefix", FX_DEVICE, "0123456789abcdef", FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0),
     0, 0, MF_E_SIGNATURE, MF_TRUST_R_WRONG_NONCE},
    {"other device", "cam-0002", FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0), 0, 0,
     MF_E_SIGNATURE, MF_TRUST_R_WRONG_DEVICE},
    {"not by director", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_REL0), BY(K_REL0), 0, 0,
     MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"unsigned model via stolen director key", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5,
     BY(K_DIR), BY(K_DIR), 0, 0, MF_E_SIGNATURE, MF_TRUST_R_UNKNOWN_KEY},
    {"names another release", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0), 1,
     0, MF_E_SIGNATURE, MF_TRUST_R_MISMATCH},
    {"names another model", FX_DEVICE, FX_NONCE, FX_DEVICE, "classifier", 5, BY(K_DIR), BY(K_REL0),
     0, 0, MF_E_SIGNATURE, MF_TRUST_R_MISMATCH},
    {"release below floor", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0), 0,
     2, MF_E_SIGNATURE, MF_TRUST_R_BELOW_FLOOR},
    {"fleet rollback at floor", FX_DEVICE, FX_NONCE, FX_DEVICE, FX_MODEL, 5, BY(K_DIR), BY(K_REL0),
     0, 1, MF_OK, MF_TRUST_R_NONE},
};

static void run_asg_case(const struct asg_case *c)
{
    mf_trust *t = fx_trust(&world, NULL);
    mf_manifest_assignment *a = NULL;
    mf_manifest_release_spec spec;
    uint8_t digest[32], *rel, *other, *asg;
    size_t ll, ol, al;
    int rc;

    if (c->floor)
        commit_floor(t, c->floor);
    fx_release_spec(&spec, "v1", 1, 1);
    rel = fx_release(&ll, &world, &spec, c->release_by);
    fx_release_spec(&spec, "v0", 1, 1); /* same everything but the version string */
    other = fx_release(&ol, &world, &spec, BY(K_REL0));
    fx_digest(digest, c->other_release ? other : rel, c->other_release ? ol : ll);
    asg = fx_assignment(&al, &world, c->signed_device, c->signed_model, digest, FX_NONCE, c->seq,
                        c->assignment_by);
    rc = mf_trust_verify_assignment(&a, t, c->device, c->nonce, asg, al, rel, ll, FX_NOW);
    if (rc != c->rc || mf_trust_last_reason(t) != c->reason)
        fail_msg("case '%s': rc %d reason '%s' (%s)", c->name, rc,
                 mf_trust_reason_name(mf_trust_last_reason(t)), mf_trust_errmsg(t));
    /* Only an accepted assignment moves the sequence. */
    assert_int_equal(mf_trust_assignment_sequence(t), rc == MF_OK ? c->seq : 0);
    if (rc == MF_OK) {
        assert_string_equal(a->device_id, c->device);
        assert_string_equal(a->model, FX_MODEL);
        assert_string_equal(a->nonce, FX_NONCE);
        assert_int_equal(a->sequence, c->seq);
        assert_memory_equal(a->release_sha256, a->release->digest, 32);
        assert_string_equal(a->release->version, "v1");
    } else {
        assert_null(a);
    }
    mf_manifest_assignment_free(a);
    mf_free(NULL, rel);
    mf_free(NULL, other);
    mf_free(NULL, asg);
    mf_trust_free(t);
}

static void test_manifest_trust__assignment_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(asg_cases) / sizeof(asg_cases[0]); i++)
        run_asg_case(&asg_cases[i]);
}

/* Verifies, in answer to a check-in that sent `sent`, an assignment signed by `by` that
 * echoes `signed_nonce` and carries sequence `seq` for a release of `version`. */
static int assign_as(mf_trust *t, uint64_t seq, const char *version, uint64_t floor,
                     const char *signed_nonce, const char *sent, const int *by)
{
    mf_manifest_assignment *a = NULL;
    mf_manifest_release_spec spec;
    uint8_t digest[32], *rel, *asg;
    size_t ll, al;
    int rc;

    fx_release_spec(&spec, version, 1, floor);
    rel = fx_release(&ll, &world, &spec, BY(K_REL0));
    fx_digest(digest, rel, ll);
    asg = fx_assignment(&al, &world, FX_DEVICE, FX_MODEL, digest, signed_nonce, seq, by);
    rc =
        mf_trust_verify_assignment(&a, t, FX_DEVICE, sent, asg, al, rel, ll, MF_TRUST_TIME_UNKNOWN);
    if (rc == MF_OK)
        assert_int_equal(mf_trust_commit_release(t, a->release), MF_OK);
    mf_manifest_assignment_free(a);
    mf_free(NULL, rel);
    mf_free(NULL, asg);
    return rc;
}

/* Verifies one assignment by the director key with sequence `seq` naming `version`. */
static int assign(mf_trust *t, uint64_t seq, const char *version, uint64_t floor)
{
    return assign_as(t, seq, version, floor, FX_NONCE, FX_NONCE, BY(K_DIR));
}

static void test_manifest_trust__assignment_sequence(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    assert_int_equal(assign(t, 10, "v3", 2), MF_OK);
    /* the same assignment again (replay), then an older one (reorder) */
    assert_int_equal(assign(t, 10, "v3", 2), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_REPLAY);
    assert_int_equal(assign(t, 9, "v2", 2), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_REPLAY);
    /* fleet rollback to an older release at the floor, then one below it */
    assert_int_equal(assign(t, 11, "v2", 2), MF_OK);
    assert_int_equal(assign(t, 12, "v1", 1), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_BELOW_FLOOR);
    assert_int_equal(mf_trust_assignment_sequence(t), 11);
    mf_trust_free(t);
}

static void test_manifest_trust__pin_and_reason(void **state)
{
    mf_manifest_assignment_spec aspec = {.device_id = FX_DEVICE,
                                         .model = FX_MODEL,
                                         .nonce = FX_NONCE,
                                         .sequence = 3,
                                         .pin = 1,
                                         .reason = "rollback: \"v2\" regressed"};
    mf_trust *t = fx_trust(&world, NULL);
    mf_manifest_assignment *a = NULL;
    mf_manifest_signer *s = NULL;
    uint8_t *rel, *asg;
    size_t ll, al;

    (void)state;
    rel = rel_ok(&ll, NULL);
    fx_digest(aspec.release_sha256, rel, ll);
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, world.priv[K_DIR], world.priv_len[K_DIR]),
                     MF_OK);
    assert_int_equal(mf_manifest_sign_assignment(&asg, &al, s, &aspec), MF_OK);
    assert_int_equal(
        mf_trust_verify_assignment(&a, t, FX_DEVICE, FX_NONCE, asg, al, rel, ll, FX_NOW), MF_OK);
    assert_int_equal(a->pin, 1);
    assert_string_equal(a->reason, aspec.reason);
    mf_manifest_assignment_free(a);
    mf_manifest_signer_free(s);
    mf_free(NULL, rel);
    mf_free(NULL, asg);
    mf_trust_free(t);
}

/* ---- keys and root --------------------------------------------------------------------- */

static void test_manifest_trust__keys_updates(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);
    uint8_t *k2, *k2b, *k1, *kroot, *kexp;
    size_t l2, l2b, l1, lroot, lexp;

    (void)state;
    k1 = fx_keys_v1(&l1, &world);
    k2 = fx_keys(&l2, &world, 2, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS));
    k2b = fx_keys(&l2b, &world, 2, FX_EXPIRES, BY(K_REL1), 1, BY(K_DIR), 1, BY(K_KEYS));
    kroot = fx_keys(&lroot, &world, 3, FX_EXPIRES, BY(K_REL0), 1, BY(K_DIR), 1,
                    BY(K_ROOT0, K_ROOT1, K_ROOT2));
    kexp = fx_keys(&lexp, &world, 3, FX_NOW, BY(K_REL0), 1, BY(K_DIR), 1, BY(K_KEYS));
    assert_int_equal(mf_trust_update_keys(t, k1, l1, FX_NOW), MF_OK); /* same doc: no-op */
    assert_int_equal(mf_trust_update_keys(t, k2, l2, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_keys_version(t), 2);
    assert_int_equal(mf_trust_update_keys(t, k1, l1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_ROLLBACK);
    assert_int_equal(mf_trust_update_keys(t, k2b, l2b, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_ROLLBACK);
    /* root keys may sign the root, not the keys document */
    assert_int_equal(mf_trust_update_keys(t, kroot, lroot, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_UNKNOWN_KEY);
    assert_int_equal(mf_trust_update_keys(t, kexp, lexp, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_EXPIRED);
    assert_int_equal(mf_trust_keys_version(t), 2);
    assert_int_equal(mf_trust_update_keys(t, kexp, lexp, MF_TRUST_TIME_UNKNOWN), MF_OK);
    assert_int_equal(mf_trust_keys_version(t), 3);
    mf_free(NULL, k1);
    mf_free(NULL, k2);
    mf_free(NULL, k2b);
    mf_free(NULL, kroot);
    mf_free(NULL, kexp);
    mf_trust_free(t);
}

/* Installs keys v`version` (release REL0, director role `dir` with threshold `thr`). */
static int keys_with_director(mf_trust *t, uint64_t version, const int *dir, unsigned int thr)
{
    uint8_t *k =
        fx_keys(&(size_t){0}, &world, version, FX_EXPIRES, BY(K_REL0), 1, dir, thr, BY(K_KEYS));
    int rc = mf_trust_update_keys(t, k, strlen((const char *)k), FX_NOW);

    mf_free(NULL, k);
    return rc;
}

#define SEQ_MAX 9007199254740992ull /* 2^53, the largest sequence the parser reads */

/* Defect: one assignment at 2^53 signed with a stolen director key refused every later
 * one for good, even after a director rotation. Now the sequence belongs to its signer:
 * keys documents that keep it (or only add keys) keep the space, one that drops it resets. */
static void test_manifest_trust__stolen_director_key_freezes_only_until_rotation(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    assert_int_equal(assign(t, 5, "v2", 1), MF_OK);
    assert_int_equal(assign(t, SEQ_MAX, "v2", 1), MF_OK); /* genuine release: accepted */
    assert_int_equal(mf_trust_assignment_sequence(t), SEQ_MAX);
    assert_int_equal(assign(t, 6, "v3", 1), MF_E_SIGNATURE); /* frozen */
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_REPLAY);
    /* keys v2 keeps the director key (and adds one): the same sequence space */
    assert_int_equal(keys_with_director(t, 2, BY(K_DIR, K_SPARE), 1), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), SEQ_MAX);
    assert_int_equal(assign_as(t, 6, "v3", 1, FX_NONCE, FX_NONCE, BY(K_SPARE)), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_REPLAY);
    /* keys v3 drops it: a fresh space for the new key, the stolen one is refused */
    assert_int_equal(keys_with_director(t, 3, BY(K_SPARE), 1), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 0);
    assert_int_equal(assign_as(t, 6, "v3", 1, FX_NONCE, FX_NONCE, BY(K_SPARE)), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 6);
    assert_int_equal(assign(t, SEQ_MAX, "v3", 1), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_UNKNOWN_KEY);
    /* within the new space sequences still only go up */
    assert_int_equal(assign_as(t, 6, "v3", 1, FX_NONCE, FX_NONCE, BY(K_SPARE)), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_REPLAY);
    /* a rollback to keys v1 (the stolen key's document) is refused, the space kept */
    assert_int_equal(keys_with_director(t, 1, BY(K_DIR), 1), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_ROLLBACK);
    assert_int_equal(mf_trust_keys_version(t), 3);
    assert_int_equal(mf_trust_assignment_sequence(t), 6);
    mf_trust_free(t);
}

/* With a threshold of two, both signers own the sequence: dropping either one resets it. */
static void test_manifest_trust__sequence_belongs_to_every_signer(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    assert_int_equal(keys_with_director(t, 2, BY(K_DIR, K_SPARE, K_REL1), 2), MF_OK);
    assert_int_equal(assign_as(t, 40, "v2", 1, FX_NONCE, FX_NONCE, BY(K_DIR, K_SPARE)), MF_OK);
    /* REL1 did not sign sequence 40: removing it keeps the space */
    assert_int_equal(keys_with_director(t, 3, BY(K_DIR, K_SPARE), 2), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 40);
    assert_int_equal(keys_with_director(t, 4, BY(K_DIR, K_REL1), 2), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 0);
    mf_trust_free(t);
}

/* Rotation to a new director key and back to the old one: the old key's space is fresh
 * again, and its old assignments, captured on the wire, still fail on the nonce echo. */
static void test_manifest_trust__rotation_back_replay_stopped_by_nonce(void **state)
{
    static const char n1[] = "11111111111111111111111111111111";
    static const char n2[] = "22222222222222222222222222222222";
    static const char n3[] = "33333333333333333333333333333333";
    mf_trust *t = fx_trust(&world, NULL);

    (void)state;
    assert_int_equal(assign_as(t, 500, "v2", 1, n1, n1, BY(K_DIR)), MF_OK);
    assert_int_equal(keys_with_director(t, 2, BY(K_SPARE), 1), MF_OK);
    assert_int_equal(assign_as(t, 7, "v3", 1, n2, n2, BY(K_SPARE)), MF_OK);
    assert_int_equal(keys_with_director(t, 3, BY(K_DIR), 1), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(t), 0);
    /* DIR's sequence-500 assignment (nonce n1) replayed in answer to n3 */
    assert_int_equal(assign_as(t, 500, "v2", 1, n1, n3, BY(K_DIR)), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_WRONG_NONCE);
    assert_int_equal(assign_as(t, 7, "v3", 1, n2, n3, BY(K_DIR)), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_WRONG_NONCE);
    assert_int_equal(mf_trust_assignment_sequence(t), 0);
    assert_int_equal(assign_as(t, 1, "v3", 1, n3, n3, BY(K_DIR)), MF_OK);
    mf_trust_free(t);
}

/* The scope is saved: a reloaded state resets on rotation exactly like the live one. */
static void test_manifest_trust__sequence_scope_survives_save_and_load(void **state)
{
    mf_trust *t = fx_trust(&world, NULL), *u = NULL, *v = NULL;
    uint8_t *buf;
    size_t n, w;

    (void)state;
    assert_int_equal(keys_with_director(t, 2, BY(K_DIR, K_SPARE), 1), MF_OK);
    assert_int_equal(assign_as(t, SEQ_MAX, "v2", 1, FX_NONCE, FX_NONCE, BY(K_SPARE)), MF_OK);
    n = mf_trust_state_size(t);
    buf = mf_alloc(NULL, n);
    assert_int_equal(mf_trust_save(buf, n, &w, t), MF_OK);
    assert_int_equal(buf[4], 2); /* format 2 */
    assert_int_equal(mf_trust_new(&u, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_load(u, buf, w), MF_OK);
    assert_int_equal(mf_trust_new(&v, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_load(v, buf, w), MF_OK);
    /* SPARE signed it, not DIR: dropping DIR keeps it, dropping SPARE resets it */
    assert_int_equal(keys_with_director(u, 3, BY(K_SPARE), 1), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(u), SEQ_MAX);
    assert_int_equal(keys_with_director(v, 3, BY(K_DIR), 1), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(v), 0);
    mf_free(NULL, buf);
    mf_trust_free(t);
    mf_trust_free(u);
    mf_trust_free(v);
}

static void test_manifest_trust__bootstrap_rules(void **state)
{
    mf_trust *t = NULL;
    uint8_t *one, *bad, *good;
    char *p, *p2;
    size_t l1, lb, lg;

    (void)state;
    one = fx_root(&l1, &world, 1, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                  BY(K_ROOT0));
    good = fx_root_v1(&lg, &world);
    /* ROOT2's public key filed under EVIL's id: the id does not name the key */
    p = payload_of(good);
    p2 = mf_strdup(NULL, p);
    replace_all(p, world.id[K_ROOT2], world.id[K_EVIL]);
    bad = fx_sign_raw(&lb, &world, MF_MANIFEST_TYPE_ROOT, p, BY(K_ROOT0, K_ROOT1));
    assert_int_equal(mf_trust_new(&t, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, one, l1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_THRESHOLD);
    assert_int_equal(mf_trust_bootstrap(t, bad, lb, FX_NOW), MF_E_INVALID);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MALFORMED);
    assert_non_null(strstr(mf_trust_errmsg(t), "key id"));
    assert_int_equal(mf_trust_root_version(t), 0);
    /* an expired image root still bootstraps: rotation is how it gets fresh */
    assert_int_equal(mf_trust_bootstrap(t, good, lg, FX_EXPIRES + 1), MF_OK);
    assert_int_equal(mf_trust_root_version(t), 1);
    mf_free(NULL, p);
    mf_free(NULL, p2);
    mf_free(NULL, one);
    mf_free(NULL, bad);
    mf_free(NULL, good);
    mf_trust_free(t);
}

/* Root v2: root role {ROOT1, SPARE} threshold 2, keys role unchanged unless keys_role given. */
static uint8_t *root_v2(size_t *len, const int *by, const int *keys_role)
{
    return fx_root(len, &world, 2, FX_EXPIRES, BY(K_ROOT1, K_SPARE), 2,
                   keys_role ? keys_role : BY(K_KEYS), 1, by);
}

static void test_manifest_trust__root_rotation(void **state)
{
    mf_trust *t = fx_trust(&world, NULL);
    mf_manifest_blob chain[3];
    uint8_t *old_only, *new_only, *v2, *v3, *v3skip, *v1;
    size_t l_old, l_new, l2, l3, l3s, l1;

    (void)state;
    old_only = root_v2(&l_old, BY(K_ROOT0, K_ROOT1), NULL);
    new_only = root_v2(&l_new, BY(K_ROOT1, K_SPARE), NULL);
    v2 = root_v2(&l2, BY(K_ROOT0, K_ROOT1, K_SPARE), NULL);
    v3 = fx_root(&l3, &world, 3, FX_EXPIRES, BY(K_SPARE), 1, BY(K_KEYS), 1, BY(K_ROOT1, K_SPARE));
    v3skip = fx_root(&l3s, &world, 3, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                     BY(K_ROOT0, K_ROOT1));
    v1 = fx_root_v1(&l1, &world);

    chain[0] = (mf_manifest_blob){old_only, l_old};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_THRESHOLD); /* N+1 has 1 of 2 */
    chain[0] = (mf_manifest_blob){new_only, l_new};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_THRESHOLD); /* N has 1 of 2 */
    chain[0] = (mf_manifest_blob){v3skip, l3s};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_MALFORMED); /* skips v2 */
    chain[0] = (mf_manifest_blob){v1, l1};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_ROLLBACK);
    assert_int_equal(mf_trust_root_version(t), 1);

    /* v2 then v3 in one walk; the keys document survives (keys role unchanged) */
    chain[0] = (mf_manifest_blob){v2, l2};
    chain[1] = (mf_manifest_blob){v3, l3};
    assert_int_equal(mf_trust_update_root(t, chain, 2, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_root_version(t), 3);
    assert_int_equal(mf_trust_keys_version(t), 1);
    /* the old root keys are out: they cannot sign v4 */
    mf_free(NULL, v1);
    v1 = fx_root(&l1, &world, 4, FX_EXPIRES, BY(K_ROOT0), 1, BY(K_KEYS), 1,
                 BY(K_ROOT0, K_ROOT1, K_ROOT2));
    chain[0] = (mf_manifest_blob){v1, l1};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_UNKNOWN_KEY);
    mf_free(NULL, old_only);
    mf_free(NULL, new_only);
    mf_free(NULL, v2);
    mf_free(NULL, v3);
    mf_free(NULL, v3skip);
    mf_free(NULL, v1);
    mf_trust_free(t);
}

static void test_manifest_trust__root_walk_bounds(void **state)
{
    mf_trust_options o;
    mf_manifest_blob chain[3];
    uint8_t *v1, *v2, *v3bad, *v2k;
    size_t l1, l2, l3, l2k;
    mf_trust *t = NULL;

    (void)state;
    v1 = fx_root_v1(&l1, &world);
    v2 = root_v2(&l2, BY(K_ROOT0, K_ROOT1, K_SPARE), NULL);
    v3bad = fx_root(&l3, &world, 3, FX_EXPIRES, BY(K_SPARE), 1, BY(K_KEYS), 1, BY(K_EVIL));
    chain[0] = chain[1] = chain[2] = (mf_manifest_blob){v2, l2};
    assert_int_equal(mf_trust_options_init(&o, MF_TRUST_OPTIONS_VERSION), MF_OK);
    o.max_root_walk = 2;
    assert_int_equal(mf_trust_new(&t, &o, NULL), MF_OK);
    assert_int_equal(mf_trust_bootstrap(t, v1, l1, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_update_root(t, chain, 3, FX_NOW), MF_E_LIMIT);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_WALK_LIMIT);
    assert_int_equal(mf_trust_root_version(t), 1);
    /* a verified step is kept when a later one fails */
    chain[1] = (mf_manifest_blob){v3bad, l3};
    assert_int_equal(mf_trust_update_root(t, chain, 2, FX_NOW), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_root_version(t), 2);
    mf_trust_free(t);

    /* a rotated root that moves the keys role drops the keys document */
    t = fx_trust(&world, NULL);
    v2k = root_v2(&l2k, BY(K_ROOT0, K_ROOT1, K_SPARE), BY(K_SPARE));
    chain[0] = (mf_manifest_blob){v2k, l2k};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_NOW), MF_OK);
    assert_int_equal(mf_trust_keys_version(t), 0);
    mf_trust_free(t);

    /* expiry of the root reached by the walk, with trustworthy time */
    t = fx_trust(&world, NULL);
    chain[0] = (mf_manifest_blob){v2, l2};
    assert_int_equal(mf_trust_update_root(t, chain, 1, FX_EXPIRES), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(t), MF_TRUST_R_EXPIRED);
    mf_trust_free(t);
    mf_free(NULL, v1);
    mf_free(NULL, v2);
    mf_free(NULL, v2k);
    mf_free(NULL, v3bad);
}

/* ---- saved state ----------------------------------------------------------------------- */

static uint32_t ref_crc32(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;

    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    return ~crc;
}

static void test_manifest_trust__state_roundtrip(void **state)
{
    mf_trust *t = fx_trust(&world, NULL), *u = NULL;
    uint8_t *buf, *buf2;
    size_t n, w, w2;

    (void)state;
    assert_int_equal(assign(t, 7, "v4", 3), MF_OK);
    n = mf_trust_state_size(t);
    buf = mf_alloc(NULL, n);
    buf2 = mf_alloc(NULL, n);
    assert_int_equal(mf_trust_save(buf, n - 1, &w, t), MF_E_LIMIT);
    assert_int_equal(mf_trust_save(buf, n, &w, t), MF_OK);
    assert_int_equal(w, n);
    assert_int_equal(mf_trust_new(&u, NULL, NULL), MF_OK);
    assert_int_equal(mf_trust_load(u, buf, w), MF_OK);
    assert_int_equal(mf_trust_root_version(u), 1);
    assert_int_equal(mf_trust_keys_version(u), 1);
    assert_int_equal(mf_trust_assignment_sequence(u), 7);
    assert_int_equal(mf_trust_floor(u, FX_MODEL), 3);
    /* the loaded state enforces what the saved one did */
    assert_int_equal(assign(u, 7, "v4", 3), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(u), MF_TRUST_R_REPLAY);
    assert_int_equal(assign(u, 8, "v1", 2), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(u), MF_TRUST_R_BELOW_FLOOR);
    /* save -> load -> save is byte-identical */
    assert_int_equal(mf_trust_save(buf2, n, &w2, u), MF_OK);
    assert_memory_equal(buf, buf2, n);
    mf_free(NULL, buf);
    mf_free(NULL, buf2);
    mf_trust_free(t);
    mf_trust_free(u);
}

static void test_manifest_trust__state_corruption(void **state)
{
    mf_trust *t = fx_trust(&world, NULL), *u = NULL;
    uint8_t *buf;
    size_t n, w;
    uint32_t crc;
    char *hit;

    (void)state;
    assert_int_equal(assign(t, 7, "v4", 3), MF_OK);
    n = mf_trust_state_size(t);
    buf = mf_alloc(NULL, n);
    assert_int_equal(mf_trust_save(buf, n, &w, t), MF_OK);
    assert_int_equal(mf_trust_new(&u, NULL, NULL), MF_OK);
    /* torn writes: every truncation is refused and leaves the state empty */
    for (size_t len = 0; len < n; len++) {
        assert_true(mf_trust_load(u, buf, len) < 0);
        assert_int_equal(mf_trust_root_version(u), 0);
    }
    /* a flipped bit anywhere fails the checksum */
    for (size_t i = 0; i < n; i += 7) {
        buf[i] ^= 0x10;
        assert_int_equal(mf_trust_load(u, buf, n), MF_E_INVALID);
        assert_int_equal(mf_trust_last_reason(u), MF_TRUST_R_STATE_CORRUPT);
        buf[i] ^= 0x10;
    }
    /* an edited signature with a recomputed checksum fails verification; the search is
     * bytewise since the header holds binary key ids (which may contain any byte) */
    hit = NULL;
    for (size_t i = 0; i + 7 <= n && !hit; i++) {
        if (memcmp(buf + i, "\"sig\":\"", 7) == 0)
            hit = (char *)buf + i + 20;
    }
    assert_non_null(hit);
    *hit = *hit == 'A' ? 'B' : 'A';
    crc = ref_crc32(buf, n - 4);
    for (int i = 0; i < 4; i++)
        buf[n - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    assert_int_equal(mf_trust_load(u, buf, n), MF_E_SIGNATURE);
    assert_int_equal(mf_trust_last_reason(u), MF_TRUST_R_STATE_CORRUPT);
    assert_int_equal(mf_trust_root_version(u), 0);
    mf_free(NULL, buf);
    mf_trust_free(t);
    mf_trust_free(u);
}

/* Overwrites `n` little-endian bytes at `at` with `v` and fixes the checksum up. */
static void state_poke(uint8_t *buf, size_t len, size_t at, uint64_t v, size_t n)
{
    uint32_t crc;

    for (size_t i = 0; i < n; i++)
        buf[at + i] = (uint8_t)(v >> (8 * i));
    crc = ref_crc32(buf, len - 4);
    for (int i = 0; i < 4; i++)
        buf[len - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
}

/* Format-2 fields that pass the checksum but not the rules: each refused as corrupt, naming
 * the value (format at 4, sequence at 8, signer count at 16). */
static void test_manifest_trust__state_format_2_fields_checked(void **state)
{
    static const struct {
        size_t at, n;
        uint64_t v;
        const char *msg;
    } cases[] = {
        {4, 4, 3, "format 3"},
        {4, 4, 0, "format 0"},
        {8, 8, SEQ_MAX + 1, "sequence 9007199254740993 above 2^53"},
        {16, 1, 17, "17 director keys"},
    };
    mf_trust *t = fx_trust(&world, NULL), *u = NULL;
    uint8_t *buf, *bad;
    size_t n, w;

    (void)state;
    assert_int_equal(assign(t, 7, "v4", 3), MF_OK);
    n = mf_trust_state_size(t);
    buf = mf_alloc(NULL, n);
    bad = mf_alloc(NULL, n);
    assert_int_equal(mf_trust_save(buf, n, &w, t), MF_OK);
    assert_int_equal(buf[16], 1); /* DIR alone signed sequence 7 */
    assert_int_equal(mf_trust_new(&u, NULL, NULL), MF_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(bad, buf, n);
        state_poke(bad, n, cases[i].at, cases[i].v, cases[i].n);
        assert_int_equal(mf_trust_load(u, bad, n), MF_E_INVALID);
        assert_int_equal(mf_trust_last_reason(u), MF_TRUST_R_STATE_CORRUPT);
        if (!strstr(mf_trust_errmsg(u), cases[i].msg))
            fail_msg("case %zu: '%s'", i, mf_trust_errmsg(u));
        assert_int_equal(mf_trust_root_version(u), 0);
    }
    /* 2^53 itself is a sequence a device accepts, so a state holding it loads */
    memcpy(bad, buf, n);
    state_poke(bad, n, 8, SEQ_MAX, 8);
    assert_int_equal(mf_trust_load(u, bad, n), MF_OK);
    assert_int_equal(mf_trust_assignment_sequence(u), SEQ_MAX);
    mf_free(NULL, buf);
    mf_free(NULL, bad);
    mf_trust_free(t);
    mf_trust_free(u);
}

/* ---- allocation failure at every N ------------------------------------------------------ */

/* One allocator for ours and cJSON's global hooks, so both fail in turn. */
static struct mf_kit_alloc fault;

struct fault_inputs {
    uint8_t *root, *keys, *rel, *asg, *state;
    size_t rl, kl, ll, al, sl;
};

/* The whole device flow; returns the first error. */
static int device_flow(const struct fault_inputs *in)
{
    const mf_allocator a = fault.a;
    mf_manifest_assignment *asg = NULL;
    mf_trust *t = NULL, *u = NULL;
    uint8_t buf[4096];
    size_t w;
    int rc;

    rc = mf_trust_new(&t, NULL, &a);
    if (rc < 0)
        return rc;
    rc = mf_trust_bootstrap(t, in->root, in->rl, FX_NOW);
    if (rc >= 0)
        rc = mf_trust_update_keys(t, in->keys, in->kl, FX_NOW);
    if (rc >= 0)
        rc = mf_trust_verify_assignment(&asg, t, FX_DEVICE, FX_NONCE, in->asg, in->al, in->rel,
                                        in->ll, FX_NOW);
    if (rc >= 0)
        rc = mf_trust_commit_release(t, asg->release);
    if (rc >= 0)
        rc = mf_trust_save(buf, sizeof(buf), &w, t);
    if (rc < 0 && mf_trust_last_reason(t) == MF_TRUST_R_NONE)
        rc = MF_E_GENERIC; /* every failure must name a reason */
    if (rc >= 0)
        rc = mf_trust_new(&u, NULL, &a);
    if (rc >= 0) {
        rc = mf_trust_load(u, buf, w);
        if (rc < 0 && mf_trust_last_reason(u) == MF_TRUST_R_NONE)
            rc = MF_E_GENERIC;
        if (rc >= 0 && mf_trust_assignment_sequence(u) != 1)
            rc = MF_E_GENERIC;
    }
    mf_manifest_assignment_free(asg);
    mf_trust_free(t);
    mf_trust_free(u);
    return rc;
}

/* Fails allocation 0, 1, 2, ... of the device flow until it succeeds; every failure must
 * be a clean error (cmocka's test_malloc reports leaks). Returns the number of allocations. */
static long fail_every_n(const struct fault_inputs *in)
{
    cJSON_Hooks hooks = {mf_kit_alloc_global_malloc, mf_kit_alloc_global_free};
    long n;

    (void)mf_kit_alloc_init(&fault, -1, MF_KIT_ALLOC_FAIL_FROM);
    mf_kit_alloc_global(&fault);
    cJSON_InitHooks(&hooks);
    for (n = 0;; n++) {
        int rc;

        mf_kit_alloc_rearm(&fault, n);
        rc = device_flow(in);
        if (fault.refused == 0) {
            assert_int_equal(rc, MF_OK);
            break;
        }
        /* cJSON reports an allocation failure as a parse failure: MF_E_INVALID. */
        if (rc != MF_E_NOMEM && rc != MF_E_INVALID)
            fail_msg("allocation %ld failed: rc %d", n, rc);
    }
    cJSON_InitHooks(NULL);
    mf_kit_alloc_global(NULL);
    return n;
}

/* Leaf 1 of a batch of 3 whose other leaves go to other devices (manifest.md §2.1). */
static uint8_t *batch_assignment(size_t *len, const uint8_t *digest)
{
    mf_manifest_assignment_spec specs[3] = {
        {.device_id = "cam-other", .model = FX_MODEL, .nonce = FX_NONCE, .sequence = 5},
        {.device_id = FX_DEVICE, .model = FX_MODEL, .nonce = FX_NONCE, .sequence = 1},
        {.device_id = "cam-third", .model = FX_MODEL, .nonce = FX_NONCE, .sequence = 9}};
    mf_manifest_signer *s = NULL;
    uint8_t *envs[3];
    size_t lens[3];

    for (int i = 0; i < 3; i++)
        memcpy(specs[i].release_sha256, digest, 32);
    assert_int_equal(mf_manifest_signer_new(&s, NULL), MF_OK);
    assert_int_equal(mf_manifest_signer_add_key(NULL, s, world.priv[K_DIR], world.priv_len[K_DIR]),
                     MF_OK);
    assert_int_equal(mf_manifest_sign_assignment_batch(envs, lens, s, specs, 3), MF_OK);
    mf_manifest_signer_free(s);
    mf_free(NULL, envs[0]);
    mf_free(NULL, envs[2]);
    *len = lens[1];
    return envs[1];
}

static void test_manifest_trust__alloc_failure_every_n(void **state)
{
    struct fault_inputs in;
    uint8_t digest[32];

    (void)state;
    in.root = fx_root_v1(&in.rl, &world);
    in.keys = fx_keys_v1(&in.kl, &world);
    in.rel = rel_ok(&in.ll, NULL);
    fx_digest(digest, in.rel, in.ll);
    in.asg = fx_assignment(&in.al, &world, FX_DEVICE, FX_MODEL, digest, FX_NONCE, 1, BY(K_DIR));
    assert_true(fail_every_n(&in) > 20); /* the flow really allocates through the hooks */
    mf_free(NULL, in.asg);
    /* The same flow with a batch-signed assignment (its batch member is one more block). */
    in.asg = batch_assignment(&in.al, digest);
    assert_non_null(strstr((const char *)in.asg, "\"batch\""));
    assert_true(fail_every_n(&in) > 20);
    mf_free(NULL, in.root);
    mf_free(NULL, in.keys);
    mf_free(NULL, in.rel);
    mf_free(NULL, in.asg);
}

/* ---- bounded memory -------------------------------------------------------------------- */

/* Ours and cJSON's global hooks on one allocator, which keeps the peak. */
static struct mf_kit_alloc heap;

static void test_manifest_trust__peak_heap_bounded(void **state)
{
    /* Everything verify_release allocates (ours and cJSON's) stays under 3x the envelope
     * plus the release block: the envelope tree is dropped before the payload is parsed. */
    static uint8_t chunks[2048][32];
    const mf_allocator a = mf_kit_alloc_init(&heap, -1, MF_KIT_ALLOC_FAIL_ONE);
    cJSON_Hooks hooks = {mf_kit_alloc_global_malloc, mf_kit_alloc_global_free};
    mf_manifest_release_spec spec;
    mf_manifest_release *r = NULL;
    mf_trust *t = fx_trust(&world, &a);
    size_t len, base;
    uint8_t *env;

    (void)state;
    fx_release_spec(&spec, "v1", 1, 0);
    spec.chunk_count = 2048;
    spec.chunks = (const uint8_t(*)[32])chunks;
    spec.size = (uint64_t)2048 * spec.chunk_size;
    env = fx_release(&len, &world, &spec, BY(K_REL0));
    mf_kit_alloc_global(&heap);
    cJSON_InitHooks(&hooks);
    base = heap.live;
    heap.peak = heap.live;
    assert_int_equal(mf_trust_verify_release(&r, t, env, len, FX_NOW), MF_OK);
    cJSON_InitHooks(NULL);
    mf_kit_alloc_global(NULL);
    assert_true(heap.peak - base < 3 * len);
    assert_true(heap.peak - base > len); /* the measurement sees the parse at all */
    mf_manifest_release_free(r);
    assert_int_equal(heap.live, base);
    mf_trust_free(t);
    mf_free(NULL, env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_trust__release_rules),
        cmocka_unit_test(test_manifest_trust__release_fields),
        cmocka_unit_test(test_manifest_trust__size_limits),
        cmocka_unit_test(test_manifest_trust__needs_root_and_keys),
        cmocka_unit_test(test_manifest_trust__assignment_rules),
        cmocka_unit_test(test_manifest_trust__assignment_sequence),
        cmocka_unit_test(test_manifest_trust__pin_and_reason),
        cmocka_unit_test(test_manifest_trust__keys_updates),
        cmocka_unit_test(test_manifest_trust__stolen_director_key_freezes_only_until_rotation),
        cmocka_unit_test(test_manifest_trust__sequence_belongs_to_every_signer),
        cmocka_unit_test(test_manifest_trust__rotation_back_replay_stopped_by_nonce),
        cmocka_unit_test(test_manifest_trust__sequence_scope_survives_save_and_load),
        cmocka_unit_test(test_manifest_trust__state_format_2_fields_checked),
        cmocka_unit_test(test_manifest_trust__bootstrap_rules),
        cmocka_unit_test(test_manifest_trust__root_rotation),
        cmocka_unit_test(test_manifest_trust__root_walk_bounds),
        cmocka_unit_test(test_manifest_trust__state_roundtrip),
        cmocka_unit_test(test_manifest_trust__state_corruption),
        cmocka_unit_test(test_manifest_trust__alloc_failure_every_n),
        cmocka_unit_test(test_manifest_trust__peak_heap_bounded),
    };
    return cmocka_run_group_tests_name("manifest_trust", tests, world_setup, world_teardown);
}
