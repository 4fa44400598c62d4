/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store ops of schema migration 3 (director inputs, admin roles, jobs, deltas) against
 * every backend in `backends` (SQLite here; the PostgreSQL engineer adds a row), plus the
 * SQLite migration from schema 2 carrying its data forward.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "mf_test.h"
#include "kit_fs.h"
#include "store_fixture.h"
#include "common/token.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A backend under test: the store fixture's SQLite or PostgreSQL (skipped where none is
 * configured), a fresh empty store for each test. */
struct backend {
    const char *name;
    int pg;
};

static const struct backend backends[] = {
    {"sqlite", 0},
    {"postgresql", 1},
};

static const struct backend *backend_under_test = &backends[0];

static int setup(void **state)
{
    *state = store_fixture_new_on("jobs", 1, backend_under_test->pg);
    return 0;
}

static void enroll(struct store_fixture *f, const char *id)
{
    uint8_t h[MF_SHA256_LEN];

    mf_token__hash(h, id, strlen(id));
    assert_int_equal(f->s->ops->auth->device_enroll(f->s, &f->ctx, id, h, 1), MF_OK);
}

static void test_server_jobs__claim_once_lease_and_retry(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_job a, b;
    int64_t queued = -1, running = -1;

    assert_int_equal(s->ops->jobs->job_claim(&a, s, &f->ctx, "n1", 100, 60), MF_E_NOTFOUND);
    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "delta", "m/v2", 100), MF_OK);
    /* Enqueueing the same pending job again is a no-op, not a second job. */
    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "delta", "m/v2", 101), MF_OK);
    assert_int_equal(s->ops->jobs->job_counts(&queued, &running, s, &f->ctx, 100), MF_OK);
    assert_int_equal(queued, 1);
    assert_int_equal(s->ops->jobs->job_claim(&a, s, &f->ctx, "n1", 100, 60), MF_OK);
    assert_string_equal(a.arg, "m/v2");
    assert_int_equal(a.attempts, 1);
    /* A second node finds nothing while the lease holds... */
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n2", 159, 60), MF_E_NOTFOUND);
    assert_int_equal(s->ops->jobs->job_counts(&queued, &running, s, &f->ctx, 159), MF_OK);
    assert_int_equal(queued, 0);
    assert_int_equal(running, 1);
    /* ...and takes it over once the lease ran out; the old owner can no longer end it. */
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n2", 160, 60), MF_OK);
    assert_int_equal(b.id, a.id);
    assert_int_equal(b.attempts, 2);
    assert_int_equal(s->ops->jobs->job_complete(s, &f->ctx, a.id, "n1"), MF_E_STATE);
    /* A failure re-queues until the attempts run out, then the job stays failed. */
    assert_int_equal(s->ops->jobs->job_fail(s, &f->ctx, b.id, "n2", "boom"), MF_OK);
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n1", 161, 60), MF_OK);
    assert_int_equal(b.attempts, 3);
    assert_int_equal(s->ops->jobs->job_fail(s, &f->ctx, b.id, "n1", "boom"), MF_OK);
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n1", 162, 60), MF_E_NOTFOUND);
    /* Done jobs can be queued again (a re-release); completion is owner-checked. */
    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "delta", "m/v2", 200), MF_OK);
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n1", 200, 60), MF_OK);
    assert_int_equal(s->ops->jobs->job_complete(s, &f->ctx, b.id, "n2"), MF_E_STATE);
    assert_int_equal(s->ops->jobs->job_complete(s, &f->ctx, b.id, "n1"), MF_OK);
    assert_int_equal(s->ops->jobs->job_claim(&b, s, &f->ctx, "n1", 10000, 60), MF_E_NOTFOUND);
}

static void test_server_jobs__expired_lease_with_no_attempts_left_fails(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_job j;

    assert_int_equal(s->ops->jobs->job_enqueue(s, &f->ctx, "delta", "m/v9", 0), MF_OK);
    for (int i = 0; i < MF_STORE_JOB_MAX_ATTEMPTS; i++)
        assert_int_equal(s->ops->jobs->job_claim(&j, s, &f->ctx, "dies", i * 100, 10), MF_OK);
    /* The node died holding the last attempt: nobody loops on it forever. */
    assert_int_equal(s->ops->jobs->job_claim(&j, s, &f->ctx, "n", 1000, 10), MF_E_NOTFOUND);
}

struct collect {
    char text[1024];
};

static int collect_pin(void *payload, const struct mf_store_pin *p)
{
    struct collect *c = payload;
    size_t n = strlen(c->text);

    (void)snprintf(c->text + n, sizeof(c->text) - n, "%d:%s:%s:%s;", p->scope, p->target, p->model,
                   p->version);
    return MF_OK;
}

static int collect_pair(void *payload, const char *a, const char *b)
{
    struct collect *c = payload;
    size_t n = strlen(c->text);

    (void)snprintf(c->text + n, sizeof(c->text) - n, "%s=%s;", a, b);
    return MF_OK;
}

static void pin(struct store_fixture *f, int scope, const char *target, const char *version)
{
    struct mf_store_pin p = {.scope = scope, .created_at = 5};

    (void)snprintf(p.target, sizeof(p.target), "%s", target);
    (void)snprintf(p.model, sizeof(p.model), "det");
    (void)snprintf(p.version, sizeof(p.version), "%s", version);
    assert_int_equal(f->s->ops->director->pin_set(f->s, &f->ctx, &p), MF_OK);
}

static void test_server_jobs__directives(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    const char *groups[] = {"zeta", "alpha"};
    struct mf_store_directives d;
    struct collect c = {""};

    enroll(f, "cam-1");
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "nosuch", "det"),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "cam-1", "det"), MF_OK);
    assert_string_equal(d.channel, "stable");
    assert_string_equal(d.device_pin, "");
    assert_string_equal(d.group_pin, "");
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "nosuch", groups, 2),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "cam-1", groups, 2), MF_OK);
    assert_int_equal(s->ops->director->device_channel_set(s, &f->ctx, "cam-1", "beta"), MF_OK);
    pin(f, MF_STORE_PIN_DEVICE, "cam-1", "v1");
    pin(f, MF_STORE_PIN_GROUP, "zeta", "v2");
    pin(f, MF_STORE_PIN_GROUP, "alpha", "v3"); /* first group by name wins */
    pin(f, MF_STORE_PIN_CHANNEL, "beta", "v4");
    pin(f, MF_STORE_PIN_CHANNEL, "stable", "v9");
    pin(f, MF_STORE_PIN_FLEET, "*", "v5");
    pin(f, MF_STORE_PIN_DEVICE, "cam-1", "v6"); /* replaces v1 */
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "cam-1", "det"), MF_OK);
    assert_string_equal(d.device_pin, "v6");
    assert_string_equal(d.group, "alpha");
    assert_string_equal(d.group_pin, "v3");
    assert_string_equal(d.channel, "beta");
    assert_string_equal(d.channel_version, "v4");
    assert_string_equal(d.fleet_rollback, "v5");
    /* Another model sees none of them. */
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "cam-1", "other"), MF_OK);
    assert_string_equal(d.device_pin, "");
    assert_string_equal(d.fleet_rollback, "");
    assert_int_equal(s->ops->director->pin_clear(s, &f->ctx, MF_STORE_PIN_GROUP, "alpha", "det"),
                     MF_OK);
    assert_int_equal(s->ops->director->pin_clear(s, &f->ctx, MF_STORE_PIN_GROUP, "alpha", "det"),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "cam-1", "det"), MF_OK);
    assert_string_equal(d.group, "zeta");
    assert_string_equal(d.group_pin, "v2");
    assert_int_equal(s->ops->director->pins_list(s, &f->ctx, collect_pin, &c), MF_OK);
    assert_string_equal(c.text, "1:cam-1:det:v6;2:zeta:det:v2;3:beta:det:v4;3:stable:det:v9;"
                                "4:*:det:v5;");
    c.text[0] = '\0';
    assert_int_equal(s->ops->director->groups_list(s, &f->ctx, collect_pair, &c), MF_OK);
    assert_string_equal(c.text, "cam-1=alpha;cam-1=zeta;");
    /* One device's groups: its rows of groups_list, never another device's. */
    enroll(f, "cam-3");
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "cam-3", groups, 1), MF_OK);
    c.text[0] = '\0';
    assert_int_equal(s->ops->director->device_groups_get(s, &f->ctx, "cam-1", collect_pair, &c),
                     MF_OK);
    assert_string_equal(c.text, "cam-1=alpha;cam-1=zeta;");
    c.text[0] = '\0';
    assert_int_equal(s->ops->director->device_groups_get(s, &f->ctx, "cam-3", collect_pair, &c),
                     MF_OK);
    assert_string_equal(c.text, "cam-3=zeta;");
    c.text[0] = '\0';
    assert_int_equal(s->ops->director->device_groups_get(s, &f->ctx, "nosuch", collect_pair, &c),
                     MF_OK);
    assert_string_equal(c.text, "");
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "cam-3", groups, 0), MF_OK);
    /* Replacing the groups with none clears them. */
    assert_int_equal(s->ops->director->device_groups_set(s, &f->ctx, "cam-1", groups, 0), MF_OK);
    c.text[0] = '\0';
    assert_int_equal(s->ops->director->groups_list(s, &f->ctx, collect_pair, &c), MF_OK);
    assert_string_equal(c.text, "");
}

static void test_server_jobs__roles_and_revocation(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    uint8_t h1[MF_SHA256_LEN], h2[MF_SHA256_LEN];
    char dev[MF_STORE_NAME_SIZE], id[MF_STORE_TOKEN_ID_LEN + 1], name[MF_STORE_NAME_SIZE];
    int role = 0;

    mf_token__hash(h1, "mfa_ops", 7);
    mf_token__hash(h2, "mfa_data", 8);
    assert_int_equal(s->ops->auth->admin_token_insert(s, &f->ctx, h1, MF_ROLE_OPS, "alice", 1),
                     MF_OK);
    assert_int_equal(s->ops->auth->admin_token_insert(s, &f->ctx, h2, MF_ROLE_DATA, "bob", 2),
                     MF_OK);
    assert_int_equal(s->ops->auth->admin_token_insert(s, &f->ctx, h2, MF_ROLE_DATA, "bob", 2),
                     MF_E_STATE);
    assert_int_equal(s->ops->auth->admin_token_auth(&role, name, s, &f->ctx, h1), MF_OK);
    assert_int_equal(role, MF_ROLE_OPS);
    assert_string_equal(name, "alice"); /* the audit log's "who" */
    assert_int_equal(s->ops->auth->admin_token_auth(&role, name, s, &f->ctx, h2), MF_OK);
    assert_int_equal(role, MF_ROLE_DATA);
    assert_string_equal(name, "bob");
    mf_hex__encode(id, h1, MF_STORE_TOKEN_ID_LEN / 2);
    assert_int_equal(s->ops->auth->admin_token_revoke(s, &f->ctx, id), MF_OK);
    assert_int_equal(s->ops->auth->admin_token_revoke(s, &f->ctx, id), MF_E_NOTFOUND);
    assert_int_equal(s->ops->auth->admin_token_auth(&role, name, s, &f->ctx, h1), MF_E_AUTH);
    /* A device credential: revoked by ops, back after a re-enrolment. */
    enroll(f, "cam-2");
    mf_token__hash(h1, "cam-2", 5);
    assert_int_equal(s->ops->auth->device_auth(dev, s, &f->ctx, h1), MF_OK);
    assert_int_equal(s->ops->auth->device_revoke(s, &f->ctx, "cam-2"), MF_OK);
    assert_int_equal(s->ops->auth->device_revoke(s, &f->ctx, "nosuch"), MF_E_NOTFOUND);
    assert_int_equal(s->ops->auth->device_auth(dev, s, &f->ctx, h1), MF_E_AUTH);
    enroll(f, "cam-2");
    assert_int_equal(s->ops->auth->device_auth(dev, s, &f->ctx, h1), MF_OK);
}

static int count_sha(void *payload, const char *unused, const char *sha)
{
    (void)unused;
    (void)sha;
    (*(int *)payload)++;
    return MF_OK;
}

static void test_server_jobs__deltas_and_fleet_versions(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s = f->s;
    struct mf_store_delta d = {.model = "det", .size = 10, .format = "mfdelta", .created_at = 1},
                          got;
    struct mf_store_status st = {.device_id = "cam-3",
                                 .model = "det",
                                 .version = "v1",
                                 .status = "installed",
                                 .reported_at = 1};
    int64_t n = -1;
    int shas = 0;

    memset(d.from_sha256, 'a', 64);
    memset(d.to_sha256, 'b', 64);
    memset(d.delta_sha256, 'c', 64);
    assert_int_equal(s->ops->registry->delta_find(&got, s, &f->ctx, d.from_sha256, d.to_sha256),
                     MF_E_NOTFOUND);
    assert_int_equal(s->ops->registry->delta_insert(s, &f->ctx, &d), MF_OK);
    assert_int_equal(s->ops->registry->delta_insert(s, &f->ctx, &d), MF_OK); /* idempotent */
    assert_int_equal(s->ops->registry->delta_find(&got, s, &f->ctx, d.from_sha256, d.to_sha256),
                     MF_OK);
    assert_string_equal(got.delta_sha256, d.delta_sha256);
    assert_int_equal(got.size, 10);
    assert_string_equal(got.format, "mfdelta");
    assert_int_equal(s->ops->registry->delta_count(&n, s, &f->ctx), MF_OK);
    assert_int_equal(n, 1);
    enroll(f, "cam-3");
    memset(st.sha256, 'a', 64);
    assert_int_equal(s->ops->devices->report_insert(s, &f->ctx, &st), MF_OK);
    (void)snprintf(st.status, sizeof(st.status), "failed"); /* failures are not "running" */
    (void)snprintf(st.model, sizeof(st.model), "det2");
    assert_int_equal(s->ops->devices->report_insert(s, &f->ctx, &st), MF_OK);
    assert_int_equal(s->ops->devices->fleet_sha256s(s, &f->ctx, "det", count_sha, &shas), MF_OK);
    assert_int_equal(shas, 1);
    shas = 0;
    assert_int_equal(s->ops->devices->fleet_sha256s(s, &f->ctx, "det2", count_sha, &shas), MF_OK);
    assert_int_equal(shas, 0);
}

/* SQLite only: a schema-2 store with data, then the migration to the latest schema. */
static void test_server_jobs__migrate_from_schema_2(void **state)
{
    struct store_fixture *f = *state;
    struct mf_store *s;
    uint8_t h[MF_SHA256_LEN];
    char db[128], dev[MF_STORE_NAME_SIZE], name[MF_STORE_NAME_SIZE];
    int applied = 0, version = 0, role = 0;

    assert_string_equal(backend_under_test->name, "sqlite"); /* see main() */
    (void)snprintf(db, sizeof(db), "%s/old.db", f->dir);
    assert_int_equal(mf_store__open(&s, &f->ctx, db, 1), MF_OK);
    assert_int_equal(mf_store__sqlite_migrate_to(&applied, s, &f->ctx, 2), MF_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(mf_store__sqlite_migrate_to(&applied, s, &f->ctx, 99), MF_E_INVALID);
    mf_token__hash(h, "mfa_old", 7);
    assert_int_equal(s->ops->auth->token_insert(s, &f->ctx, MF_TOKEN_ADMIN, h, 1), MF_OK);
    mf_store__close(s);
    /* A device row as schema 2 wrote it (today's enroll SQL needs schema 3 columns). */
    {
        sqlite3 *raw = NULL;
        sqlite3_stmt *st = NULL;

        mf_token__hash(h, "old-cam", 7);
        assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(raw,
                                            "INSERT INTO devices(device_id, credential_hash,"
                                            " enrolled_at) VALUES('old-cam', ?, 1)",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_blob(st, 1, h, MF_SHA256_LEN, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(raw);
    }

    assert_int_equal(mf_store__open(&s, &f->ctx, db, 0), MF_OK);
    if (s->ops->migrate(&applied, s, &f->ctx) < 0)
        fail_msg("migrate from 2: %s", mf_ctx__errmsg(&f->ctx));
    assert_true(applied >= 1);
    assert_int_equal(s->ops->schema_version(&version, s, &f->ctx), MF_OK);
    assert_int_equal(version, 2 + applied);
    /* An admin token from before roles keeps every right; devices keep their credential
     * and land on the default channel. */
    mf_token__hash(h, "mfa_old", 7);
    assert_int_equal(s->ops->auth->admin_token_auth(&role, name, s, &f->ctx, h), MF_OK);
    assert_int_equal(role, MF_ROLE_ADMIN);
    mf_token__hash(h, "old-cam", 7);
    assert_int_equal(s->ops->auth->device_auth(dev, s, &f->ctx, h), MF_OK);
    {
        struct mf_store_directives d;

        assert_int_equal(s->ops->director->directives_get(&d, s, &f->ctx, "old-cam", "m"), MF_OK);
        assert_string_equal(d.channel, "stable");
    }
    mf_store__close(s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, store_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_server_jobs__claim_once_lease_and_retry),
        T(test_server_jobs__expired_lease_with_no_attempts_left_fails),
        T(test_server_jobs__directives),
        T(test_server_jobs__roles_and_revocation),
        T(test_server_jobs__deltas_and_fleet_versions),
    };
    const struct CMUnitTest sqlite_only[] = {
        T(test_server_jobs__migrate_from_schema_2),
    };
#undef T
    int failed = 0;

    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
        backend_under_test = &backends[i];
        failed += mf_test__run_group(backends[i].name, tests, MF_TEST_COUNT(tests), sqlite_only,
                                     MF_TEST_COUNT(sqlite_only),
                                     strcmp(backends[i].name, "sqlite") == 0, NULL, NULL);
    }
    return failed;
}
