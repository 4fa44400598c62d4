/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmf delivery against a hostile or broken server (agent_fixture.c's fake): resumable
 * downloads (Range + If-Range on the ETag, verified-prefix progress across a restart),
 * connection cuts, corrupted bytes (only the bad chunk is fetched again), stalls, a 200
 * to a ranged request, a wrong Content-Range, a new ETag after a re-publish, the bandwidth
 * cap; deltas (applied into the inactive slot, resumed from their checkpoint after a cut
 * write, fallback to the full blob, metered refusal); and the peak heap of a large update.
 * Every case ends in a clear error or a correct install, never a corrupt one.
 */
#include "agent_fixture.h"
#include "mf/diff.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MIB (1024u * 1024u)

static mf_agent_counters stats_of(mf_agent *agent)
{
    mf_agent_counters c = MF_AGENT_COUNTERS_INIT;

    assert_int_equal(mf_agent_stats(&c, agent), MF_OK);
    return c;
}

/* An agent with `old` installed as v1 (slot a). */
static mf_agent *agent_with(struct fixture *fx, const uint8_t *old, size_t n)
{
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", old, n, old, n);
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    return agent;
}

static void test_agent_delivery__cut_resumes_and_refetches_at_most_one_chunk(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = agent_with(fx, model_v1, sizeof(model_v1));
    mf_agent_counters before = stats_of(agent), after;

    /* Cut 100 bytes past 1.5 MiB: chunk 0 (1 MiB) is verified, chunk 1 is not. */
    fake_assign(&fx->srv, "v2", v2, 3 * MIB, v2, 3 * MIB);
    fx->srv.cut_at = 3 * MIB / 2 + 100;
    fx->srv.cuts_left = 1;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    /* The resume asked from the end of the last verified chunk, with If-Range. */
    assert_int_equal(fx->srv.n_ranged, 1);
    assert_int_equal(fx->srv.last_range_from, MIB);
    after = stats_of(agent);
    assert_int_equal(after.blob_requests - before.blob_requests, 2);
    /* Re-downloaded: the unverified half chunk only (<= one chunk). */
    assert_true(after.blob_bytes - before.blob_bytes - 3 * MIB <= MIB);
    assert_false(exists(fx, "models/detector/slot-b.part.prog"));
    mf_agent_free(agent);
    test_free(v2);
}

/* An agent running v1 and assigned v2 (`n` bytes), stepped once while the server cuts
 * `cuts` responses, the first at byte `at` and each next one `further` on: the step ends
 * in `code`. */
static mf_agent *v2_under_cuts(struct fixture *fx, const uint8_t *v2, size_t n, uint64_t at,
                               uint64_t further, int cuts, int code)
{
    mf_agent *agent = agent_with(fx, model_v1, sizeof(model_v1));

    fake_assign(&fx->srv, "v2", v2, n, v2, n);
    fx->srv.cut_at = at;
    fx->srv.cut_step = further;
    fx->srv.cuts_left = cuts;
    step_expect(agent, code);
    return agent;
}

/* Leaves v2's first two MiB verified on storage (progress record included): every request
 * is cut at 2.5 MiB, two chunks verified, then no more progress. */
static mf_agent *interrupted_v2(struct fixture *fx, const uint8_t *v2)
{
    mf_agent *agent = v2_under_cuts(fx, v2, 3 * MIB, 5 * MIB / 2, 0, 100, MF_E_NET);

    fx->srv.cuts_left = 0;
    return agent;
}

/* Defect: when the last in-step attempt made progress before it failed, its message was
 * cleared for an attempt that never came, and the failed report had an empty detail. */
static void test_agent_delivery__last_attempt_with_progress_keeps_its_reason(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(6 * MIB, 2);
    /* One cut per attempt, each a chunk further on: every attempt verifies one more chunk,
     * so the step ends after its 4 attempts on a failure that made progress. */
    mf_agent *agent = v2_under_cuts(fx, v2, 6 * MIB, MIB + 100, MIB, 4, MF_E_NET);

    assert_int_equal(fx->srv.n_ranged, 3);
    assert_int_equal(fx->srv.last_range_from, 3 * MIB);
    assert_string_equal(fx->srv.report_status, "failed");
    /* the detail names the failure: the cut of the 4th attempt */
    assert_non_null(strstr(fx->srv.report_detail, "truncated response"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "truncated response"));
    assert_active(agent, "v1", 'a');
    /* the verified prefix is kept: the next step finishes the download */
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_int_equal(fx->srv.last_range_from, 4 * MIB);
    mf_agent_free(agent);
    test_free(v2);
}

/* Storage damage in v2's .part while the power was off: the byte at `at` flipped. */
static void damage_part(struct fixture *fx, const uint8_t *v2, long at)
{
    char path[160];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/models/detector/slot-b.part", fx->dir);
    f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    assert_int_equal(fputc(0xff ^ v2[at], f), 0xff ^ v2[at]);
    assert_int_equal(fclose(f), 0);
}

/* A new process on the same state (as after a power cut) whose first step installs the
 * 3 MiB v2 into slot b. */
static mf_agent *restart_installs_v2(struct fixture *fx, const uint8_t *v2)
{
    mf_agent *agent = NULL;

    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    return agent;
}

static void test_agent_delivery__progress_survives_a_restart(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = interrupted_v2(fx, v2);
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    mf_agent_counters c;

    assert_active(agent, "v1", 'a');
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_string_equal(st.download_kind, "model");
    assert_int_equal(st.download_total, 3 * MIB);
    mf_agent_free(agent);
    /* On storage: exactly the verified prefix and its record. */
    assert_true(exists(fx, "models/detector/slot-b.part.prog"));
    assert_file_equals(fx, "models/detector/slot-b.part", v2, 2 * MIB);

    /* A new process (power cut) resumes at 2 MiB: only the last MiB crosses the wire. */
    agent = restart_installs_v2(fx, v2);
    assert_int_equal(fx->srv.last_range_from, 2 * MIB);
    c = stats_of(agent);
    assert_int_equal(c.blob_bytes, MIB);
    assert_int_equal(c.resumes, 1);
    mf_agent_free(agent);
    test_free(v2);
}

/* Appends `n` bytes to a file of the state dir. */
static void append_to(const struct fixture *fx, const char *name, const void *p, size_t n)
{
    char path[256];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
    f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_agent_delivery__resume_reverifies_what_storage_holds(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = interrupted_v2(fx, v2);
    static const uint8_t junk[4096] = {1, 2, 3};

    /* A process killed after the last record: more verified bytes than recorded are on
     * storage, then a torn tail. The resume keeps every chunk that verifies. */
    append_to(fx, "models/detector/slot-b.part", v2 + 2 * MIB, MIB / 2);
    append_to(fx, "models/detector/slot-b.part", junk, sizeof(junk));
    mf_agent_free(agent);
    agent = restart_installs_v2(fx, v2);
    assert_int_equal(fx->srv.last_range_from, 2 * MIB);
    mf_agent_free(agent);

    /* Storage damage inside a recorded chunk: the resume starts before it, not after. */
    agent = agent_with(fx, model_v1, sizeof(model_v1));
    mf_agent_free(agent);
    agent = interrupted_v2(fx, v2);
    mf_agent_free(agent);
    damage_part(fx, v2, MIB + 77);
    agent = restart_installs_v2(fx, v2);
    assert_int_equal(fx->srv.last_range_from, MIB);
    mf_agent_free(agent);
    test_free(v2);
}

/* v2 interrupted after two MiB, then resumed against a server in `mode`: the whole of v2
 * is installed. Returns what the resume added to the counters. */
static mf_agent_counters resumed_with(struct fixture *fx, enum blob_mode mode)
{
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = interrupted_v2(fx, v2);
    mf_agent_counters before = stats_of(agent), grown;

    fx->srv.blob_mode = mode;
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    grown = stats_of(agent);
    grown.blob_bytes -= before.blob_bytes;
    grown.blob_requests -= before.blob_requests;
    mf_agent_free(agent);
    test_free(v2);
    return grown;
}

static void test_agent_delivery__200_to_a_range_restarts_from_zero(void **state)
{
    /* The 200 body was taken from byte 0, not written at the resume offset. */
    assert_int_equal(resumed_with(*state, BLOB_NO_RANGE).blob_bytes, 3 * MIB);
}

static void test_agent_delivery__wrong_content_range_is_refused(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = interrupted_v2(fx, v2);

    fx->srv.blob_mode = BLOB_WRONG_RANGE;
    step_expect(agent, MF_E_NET);
    assert_non_null(strstr(mf_agent_errmsg(agent), "wrong Content-Range"));
    assert_active(agent, "v1", 'a');
    assert_false(exists(fx, "models/detector/slot-b"));
    /* Nothing foreign was spliced in: the verified prefix is still all there is. */
    assert_file_equals(fx, "models/detector/slot-b.part", v2, 2 * MIB);
    fx->srv.blob_mode = BLOB_OK;
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    mf_agent_free(agent);
    test_free(v2);
}

static void test_agent_delivery__new_etag_on_206_starts_over(void **state)
{
    /* A 206 under another ETag (a re-publish the server did not check If-Range against):
     * the agent starts over from byte 0 with a plain GET, which is served normally. */
    assert_true(resumed_with(*state, BLOB_NEW_ETAG).blob_requests >= 2);
}

/* v3 served corrupt on every request: refused with `why` in the message, v2 left running
 * in slot b. */
static void assert_corrupt_v3_refused(struct fixture *fx, mf_agent *agent, const char *why)
{
    fake_assign(&fx->srv, "v3", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.corrupt_at = 20;
    fx->srv.corrupt_left = 100;
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), why));
    assert_active(agent, "v2", 'b');
}

static void test_agent_delivery__corrupt_chunk_is_fetched_again_alone(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = agent_with(fx, model_v1, sizeof(model_v1));
    mf_agent_counters before = stats_of(agent);

    fake_assign(&fx->srv, "v2", v2, 3 * MIB, v2, 3 * MIB);
    fx->srv.corrupt_at = MIB + 12345; /* in chunk 1, once */
    fx->srv.corrupt_left = 1;
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    assert_int_equal(fx->srv.last_range_from, MIB);
    /* The bad chunk came twice, nothing else did (plus what was in flight at the abort). */
    assert_true(stats_of(agent).blob_bytes - before.blob_bytes >= 4 * MIB);
    assert_true(stats_of(agent).blob_bytes - before.blob_bytes <= 4 * MIB + 256 * 1024);
    /* Corrupt every time: a clear refusal naming the chunk, v1 untouched. */
    assert_corrupt_v3_refused(fx, agent, "chunk 1 (bytes from 16)");
    assert_non_null(strstr(mf_agent_errmsg(agent), "download aborted"));
    mf_agent_free(agent);
    test_free(v2);
}

/* An agent running v1 and assigned v2 (3 MiB) as a chunk-tree release. */
static mf_agent *agent_with_tree_v2(struct fixture *fx, const uint8_t *v2)
{
    mf_agent *agent = agent_with(fx, model_v1, sizeof(model_v1));

    fx->srv.chunk_tree_only = 1;
    fake_assign(&fx->srv, "v2", v2, 3 * MIB, v2, 3 * MIB);
    return agent;
}

/* The same, from a server that names the release's chunk list (docs/protocol.md). */
static mf_agent *agent_with_listed_tree_v2(struct fixture *fx, const uint8_t *v2)
{
    fx->srv.offer_chunk_list = 1;
    return agent_with_tree_v2(fx, v2);
}

/* A chunk-tree release (no flat list in the signed release) from a server that offers no
 * chunk list (one from before the list was a blob): the download is held to the signed
 * sha256 as a whole, resumes after a cut, and a corrupt byte is refused with v2 left
 * running. */
static void test_agent_delivery__chunk_tree_release_installs_and_resumes(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = agent_with_tree_v2(fx, v2);
    mf_agent_counters before = stats_of(agent), after;
    mf_manifest_release *r = NULL;
    mf_trust *t = fx_trust(&world, NULL);

    /* What the device is sent names its chunks by the root alone. */
    assert_int_equal(mf_trust_verify_release(&r, t, fx->srv.release_env, fx->srv.release_len, 0),
                     MF_OK);
    assert_null(r->chunks);
    assert_true(r->has_chunks_root);
    mf_manifest_release_free(r);
    mf_trust_free(t);
    fx->srv.cut_at = 3 * MIB / 2 + 100;
    fx->srv.cuts_left = 1;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    assert_false(exists(fx, "models/detector/slot-b.part.prog"));
    /* Resumed where the cut fell (the whole digest goes on): no byte came twice. */
    after = stats_of(agent);
    assert_int_equal(fx->srv.n_ranged, 1);
    assert_int_equal(fx->srv.last_range_from, 3 * MIB / 2 + 100);
    assert_int_equal(after.blob_bytes - before.blob_bytes, 3 * MIB);
    /* Served bytes that differ from the signed ones: refused, nothing installed. */
    assert_corrupt_v3_refused(fx, agent, "sha256 mismatch");
    mf_agent_free(agent);
    test_free(v2);
}

/* A power cut in the download of a chunk-tree release: the new process keeps the synced
 * prefix its progress record names and fetches only the rest. */
static void test_agent_delivery__chunk_tree_release_survives_a_restart(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = agent_with_tree_v2(fx, v2);
    mf_agent_counters c;

    /* Every attempt is cut a quarter MiB further on: the step ends on its last failure. */
    fx->srv.cut_at = MIB;
    fx->srv.cut_step = MIB / 4;
    fx->srv.cuts_left = 100;
    step_expect(agent, MF_E_NET);
    assert_active(agent, "v1", 'a');
    mf_agent_free(agent);
    assert_true(exists(fx, "models/detector/slot-b.part.prog"));
    fx->srv.cuts_left = 0;
    agent = restart_installs_v2(fx, v2);
    c = stats_of(agent);
    /* Four attempts were cut at 1, 1.25, 1.5 and 1.75 MiB, each byte synced before the cut
     * kept: the new process asks from 1.75 MiB and receives only the rest. */
    assert_int_equal(fx->srv.last_range_from, 7 * MIB / 4);
    assert_int_equal(c.blob_bytes, 3 * MIB - 7 * MIB / 4);
    assert_int_equal(c.resumes, 1);
    mf_agent_free(agent);
    test_free(v2);
}

/* The chunk list as a blob of its own (docs/protocol.md, "chunk_list"): a chunk-tree release
 * whose list the check-in names is verified chunk by chunk as with a flat list. A cut resumes
 * at the end of the last verified chunk (not where it fell: those bytes are unproven until
 * their chunk completes), a corrupt chunk alone is fetched again, and a persistent one is
 * refused naming its chunk. */
static void test_agent_delivery__chunk_list_verifies_each_chunk(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent;
    mf_agent_counters before;

    agent = agent_with_listed_tree_v2(fx, v2);
    before = stats_of(agent);
    assert_int_equal(fx->srv.chunk_list_len, 3 * 32);
    fx->srv.cut_at = 3 * MIB / 2 + 100;
    fx->srv.cuts_left = 1;
    fx->srv.corrupt_at = 2 * MIB + 12345; /* in chunk 2, once */
    fx->srv.corrupt_left = 1;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    assert_int_equal(fx->srv.n_list, 1);
    /* Resumed from chunk 1's start after the cut, then from chunk 2's after the bad byte. */
    assert_int_equal(fx->srv.n_ranged, 2);
    assert_int_equal(fx->srv.last_range_from, 2 * MIB);
    /* v2 once, the half chunk before the cut and chunk 2 again, the list: nothing else. */
    assert_true(stats_of(agent).blob_bytes - before.blob_bytes <=
                3 * MIB + MIB / 2 + 100 + MIB + 96);
    assert_int_equal(stats_of(agent).blob_requests - before.blob_requests, 4);
    /* Corrupt every time: refused at its chunk (v3's chunk 1), v2 still running. */
    assert_corrupt_v3_refused(fx, agent, "chunk 1 (bytes from 16)");
    assert_non_null(strstr(mf_agent_errmsg(agent), "download aborted"));
    mf_agent_free(agent);
    test_free(v2);
}

/* v2 as a chunk-tree release with its list, its download cut at 2.5 MiB `cuts` times with the
 * blob served in `mode`: the step ends in `code`. */
static mf_agent *listed_v2_cut(struct fixture *fx, const uint8_t *v2, int cuts, enum blob_mode mode,
                               int code)
{
    mf_agent *agent = agent_with_listed_tree_v2(fx, v2);

    fx->srv.cut_at = 5 * MIB / 2;
    fx->srv.cuts_left = cuts;
    fx->srv.blob_mode = mode;
    step_expect(agent, code);
    return agent;
}

/* A power cut in the download of a chunk-tree release with its list: the new process fetches
 * the list again, re-verifies the .part against it and resumes at the last verified chunk. */
static void test_agent_delivery__chunk_list_survives_a_restart(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = listed_v2_cut(fx, v2, 100, BLOB_OK, MF_E_NET);

    assert_active(agent, "v1", 'a');
    mf_agent_free(agent);
    fx->srv.cuts_left = 0;
    /* Storage damaged in chunk 1 while the power was off: only from there is fetched again. */
    damage_part(fx, v2, MIB + 77);
    agent = restart_installs_v2(fx, v2);
    assert_int_equal(fx->srv.last_range_from, MIB);
    assert_int_equal(fx->srv.n_list, 2);
    mf_agent_free(agent);
    test_free(v2);
}

/* A 200 with every byte to the resume's Range request: the .part restarts from 0 and the
 * chunk list still holds every chunk of the new body. */
static void test_agent_delivery__chunk_list_with_200_to_a_range(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = listed_v2_cut(fx, v2, 1, BLOB_NO_RANGE, MF_OK);

    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    assert_int_equal(fx->srv.n_ranged, 1);
    assert_int_equal(fx->srv.last_range_from, 2 * MIB);
    mf_agent_free(agent);
    test_free(v2);
}

/* A chunk list that does not lead to the signed root, is truncated, has one hash too many,
 * is missing or comes as a 206: refused before any model byte is fetched, v1 keeps running,
 * the failure is reported, and the next step with a good list installs v2. */
static void test_agent_delivery__bad_chunk_list_is_refused(void **state)
{
    static const struct {
        enum list_mode mode;
        int code;
        const char *why;
    } cases[] = {
        {LIST_FLIPPED, MF_E_SIGNATURE, "does not hash to the signed chunks_root"},
        {LIST_SHORT, MF_E_SIGNATURE, "86 bytes, not 3 hashes of 32"},
        {LIST_LONG, MF_E_SIGNATURE, "longer than the 3 hashes"},
        {LIST_404, MF_E_NOTFOUND, "404"},
        {LIST_206, MF_E_NET, "206"},
    };
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = agent_with(fx, model_v1, sizeof(model_v1));
    mf_agent_counters before;

    fx->srv.chunk_tree_only = 1;
    fx->srv.offer_chunk_list = 1;
    fake_assign(&fx->srv, "v2", v2, 3 * MIB, v2, 3 * MIB);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fx->srv.list_mode = cases[i].mode;
        before = stats_of(agent);
        step_expect(agent, cases[i].code);
        if (!strstr(mf_agent_errmsg(agent), "chunk list of model detector v2") ||
            !strstr(mf_agent_errmsg(agent), cases[i].why))
            fail_msg("case %zu: %s", i, mf_agent_errmsg(agent));
        assert_string_equal(fx->srv.report_status, "failed");
        assert_active(agent, "v1", 'a');
        /* The list only: not one byte of the model. */
        assert_int_equal(stats_of(agent).blob_requests - before.blob_requests, 1);
        assert_true(stats_of(agent).blob_bytes - before.blob_bytes <= 96 + 32);
        assert_false(exists(fx, "models/detector/slot-b.part"));
    }
    fx->srv.list_mode = LIST_OK;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    mf_agent_free(agent);
    test_free(v2);
}

/* Steps `agent` expecting `code`; returns how long the step took, in seconds. */
static double timed_step(mf_agent *agent, int code)
{
    struct timespec t0, t1;

    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    step_expect(agent, code);
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static void test_agent_delivery__stall_is_cut_and_resumed(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    mf_agent *agent = NULL;
    double s;

    /* Slower than 64 KiB/s for a second counts as a stall. */
    fx->opts.stall_timeout_s = 1;
    fx->opts.stall_bytes_per_s = 64 * 1024;
    agent = agent_with(fx, model_v1, sizeof(model_v1));
    fake_assign(&fx->srv, "v2", v2, 3 * MIB, v2, 3 * MIB);
    /* The server sends half, then goes silent for 2.5 s (once). */
    fx->srv.blob_mode = BLOB_STALL;
    fx->srv.stall_ms = 2500;
    fx->srv.stall_left = 1;
    s = timed_step(agent, MF_OK);
    print_message("stalled transfer abandoned and resumed in %.2f s\n", s);
    assert_true(s < 2.4); /* before the server's 2.5 s of silence end */
    assert_file_equals(fx, "models/detector/slot-b", v2, 3 * MIB);
    assert_int_equal(fx->srv.n_ranged, 1);
    assert_int_equal(fx->srv.last_range_from, MIB); /* 1.5 MiB arrived: chunk 0 verified */
    mf_agent_free(agent);
    fake_settle(&fx->srv); /* the silent half still reads v2 */
    test_free(v2);
}

static void test_agent_delivery__oversized_206_is_refused(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(3 * MIB, 2);
    uint8_t *longer = test_malloc(3 * MIB + 4096);
    mf_agent *agent = interrupted_v2(fx, v2);

    /* The server now holds more bytes than signed: the resumed 206 would overrun. */
    memcpy(longer, v2, 3 * MIB);
    memset(longer + 3 * MIB, 'x', 4096);
    fx->srv.blob = longer;
    fx->srv.blob_len = 3 * MIB + 4096;
    step_expect(agent, MF_E_NET);
    assert_active(agent, "v1", 'a');
    assert_false(exists(fx, "models/detector/slot-b"));
    mf_agent_free(agent);
    test_free(longer);
    test_free(v2);
}

static void test_agent_delivery__bandwidth_cap_slows_the_download(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v2 = make_model(6 * MIB, 2);
    mf_agent *agent = NULL;
    double s;

    fx->opts.max_recv_bytes_per_s = 2 * MIB;
    agent = agent_with(fx, model_v1, sizeof(model_v1));
    fake_assign(&fx->srv, "v2", v2, 6 * MIB, v2, 6 * MIB);
    s = timed_step(agent, MF_OK);
    print_message("6 MiB at a 2 MiB/s cap took %.2f s\n", s);
    /* 3 s nominal; libcurl lets a first burst through. Uncapped this is ~0.05 s. */
    assert_true(s >= 1.0);
    mf_agent_free(agent);
    test_free(v2);
}

/* ---- deltas ---- */

static uint8_t *make_delta(size_t *len, const uint8_t *old, size_t old_len, const uint8_t *neu,
                           size_t new_len)
{
    mf_diff *d = NULL;
    uint8_t *patch = NULL, *copy;

    assert_int_equal(mf_diff_new(&d, NULL, NULL), MF_OK);
    assert_int_equal(mf_diff_create(&patch, len, d, old, old_len, neu, new_len), MF_OK);
    copy = test_malloc(*len);
    memcpy(copy, patch, *len);
    mf_free(NULL, patch);
    mf_diff_free(d);
    return copy;
}

static void test_agent_delivery__delta_is_applied_into_the_inactive_slot(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v1 = make_model(2 * MIB, 1), *v2 = make_model(2 * MIB, 2);
    size_t dlen = 0;
    uint8_t *delta = make_delta(&dlen, v1, 2 * MIB, v2, 2 * MIB);
    mf_agent *agent = agent_with(fx, v1, 2 * MIB);
    int blobs = fx->srv.n_blob;
    mf_agent_counters before = stats_of(agent), c;

    fake_assign(&fx->srv, "v2", v2, 2 * MIB, v2, 2 * MIB);
    fake_offer_delta(&fx->srv, delta, dlen, v1, 2 * MIB);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 2 * MIB);
    assert_file_equals(fx, "models/detector/slot-a", v1, 2 * MIB);
    assert_int_equal(fx->srv.n_delta_blob, 1);
    assert_int_equal(fx->srv.n_blob, blobs); /* the full blob was never fetched */
    c = stats_of(agent);
    assert_int_equal(c.delta_installs, 1);
    assert_int_equal(c.blob_bytes - before.blob_bytes, dlen);
    print_message("2 MiB update by a %zu-byte delta\n", dlen);
    assert_false(exists(fx, "models/detector/slot-b.delta"));
    assert_false(exists(fx, "models/detector/slot-b.part.ckpt"));
    mf_agent_free(agent);
    test_free(delta);
    test_free(v1);
    test_free(v2);
}

/* Deltas towards a chunk-tree release: the output is verified against the fetched list, a
 * good delta's as it is written, and a delta whose output fails a chunk falls back to the
 * full blob, verified against the same list. */
static void test_agent_delivery__chunk_list_verifies_a_delta(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v1 = make_model(2 * MIB, 1), *v2 = make_model(2 * MIB, 2);
    uint8_t *v3 = make_model(2 * MIB, 3), *other = make_model(2 * MIB, 9);
    size_t dlen = 0, blen = 0;
    uint8_t *delta = make_delta(&dlen, v1, 2 * MIB, v2, 2 * MIB);
    uint8_t *bad = make_delta(&blen, other, 2 * MIB, v3, 2 * MIB);
    mf_agent *agent = agent_with(fx, v1, 2 * MIB);
    int blobs = fx->srv.n_blob;

    fx->srv.chunk_tree_only = 1;
    fx->srv.offer_chunk_list = 1;
    fake_assign(&fx->srv, "v2", v2, 2 * MIB, v2, 2 * MIB);
    fake_offer_delta(&fx->srv, delta, dlen, v1, 2 * MIB);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", v2, 2 * MIB);
    assert_int_equal(fx->srv.n_list, 1);
    assert_int_equal(fx->srv.n_blob, blobs); /* the full blob was never fetched */
    assert_int_equal(stats_of(agent).delta_installs, 1);
    /* From v2 to v3 by a delta made from other bytes: its first chunk fails the list. */
    fake_assign(&fx->srv, "v3", v3, 2 * MIB, v3, 2 * MIB);
    fake_offer_delta(&fx->srv, bad, blen, v2, 2 * MIB);
    step_expect(agent, MF_OK);
    assert_active(agent, "v3", 'a');
    assert_file_equals(fx, "models/detector/slot-a", v3, 2 * MIB);
    assert_int_equal(stats_of(agent).delta_fallbacks, 1);
    assert_int_equal(fx->srv.n_blob, blobs + 1);
    mf_agent_free(agent);
    test_free(bad);
    test_free(delta);
    test_free(other);
    test_free(v3);
    test_free(v2);
    test_free(v1);
}

static void test_agent_delivery__bad_delta_falls_back_unless_metered(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v1 = make_model(MIB, 1), *v2 = make_model(MIB, 2), *other = make_model(MIB, 9);
    size_t dlen = 0;
    /* A delta from another old image: it decodes, but the output fails the chunk hashes. */
    uint8_t *delta = make_delta(&dlen, other, MIB, v2, MIB);
    mf_agent *agent = agent_with(fx, v1, MIB);
    int blobs = fx->srv.n_blob;

    fake_assign(&fx->srv, "v2", v2, MIB, v2, MIB);
    fake_offer_delta(&fx->srv, delta, dlen, v1, MIB);
    mf_agent_set_metered(agent, 1);
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "metered"));
    assert_int_equal(fx->srv.n_blob, blobs); /* no full download on a metered link */
    assert_active(agent, "v1", 'a');
    assert_non_null(strstr(fx->srv.report_detail, "not falling back"));
    mf_agent_set_metered(agent, 0);
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_blob, blobs + 1);
    assert_int_equal(stats_of(agent).delta_fallbacks, 1);
    assert_file_equals(fx, "models/detector/slot-b", v2, MIB);
    mf_agent_free(agent);
    test_free(delta);
    test_free(v1);
    test_free(v2);
    test_free(other);
}

/* A port whose writes to the slot .part fail after `budget` bytes: a power cut mid-apply. */
struct cut_port {
    mf_platform_ops inner;
    long long budget;
};

static int cut_write(void *payload, mf_platform_file *file, const void *buf, size_t len)
{
    struct cut_port *c = payload;

    if (c->budget >= 0 && (long long)len > c->budget)
        return MF_E_IO;
    if (c->budget >= 0)
        c->budget -= (long long)len;
    return c->inner.write(c->inner.payload, file, buf, len);
}

#define FWD(name, ret, params, args)                                                               \
    static ret cut_##name params                                                                   \
    {                                                                                              \
        struct cut_port *c = payload;                                                              \
        return c->inner.name args;                                                                 \
    }
FWD(random, int, (void *payload, void *buf, size_t len), (c->inner.payload, buf, len))
FWD(monotonic_ms, uint64_t, (void *payload), (c->inner.payload))
FWD(wall_clock_s, int64_t, (void *payload), (c->inner.payload))
FWD(open, int, (void *payload, mf_platform_file **f, const char *name, int mode),
    (c->inner.payload, f, name, mode))
FWD(read_at, int,
    (void *payload, size_t *n, mf_platform_file *f, uint64_t off, void *buf, size_t len),
    (c->inner.payload, n, f, off, buf, len))
FWD(sync, int, (void *payload, mf_platform_file *f), (c->inner.payload, f))
FWD(size, int, (void *payload, uint64_t *out, const char *name), (c->inner.payload, out, name))
FWD(rename, int, (void *payload, const char *from, const char *to), (c->inner.payload, from, to))
FWD(remove, int, (void *payload, const char *name), (c->inner.payload, name))
FWD(mkdir, int, (void *payload, const char *name), (c->inner.payload, name))
FWD(truncate, int, (void *payload, mf_platform_file *f, uint64_t size), (c->inner.payload, f, size))

static void cut_close(void *payload, mf_platform_file *f)
{
    struct cut_port *c = payload;

    c->inner.close(c->inner.payload, f);
}

/* Installs v2 (n bytes) from a delta made from v1 (a compressed full blob when v1 is NULL:
 * nothing installed, the delta from the empty image) with storage dying after the delta and
 * 2 MiB of output, then "reboots": the apply resumes from its checkpoint, nothing is
 * downloaded twice past the delta, and the image is exact. */
static void cut_then_resume(struct fixture *fx, const uint8_t *v1, const uint8_t *v2, size_t n)
{
    size_t dlen = 0, old_len = v1 ? n : 0;
    const uint8_t *old = v1 ? v1 : (const uint8_t *)"";
    uint8_t *delta = make_delta(&dlen, old, old_len, v2, n);
    struct cut_port cut = {fx->ops, -1};
    const mf_platform_ops ops = {
        .version = MF_PLATFORM_OPS_VERSION,
        .payload = &cut,
        .random = cut_random,
        .monotonic_ms = cut_monotonic_ms,
        .wall_clock_s = cut_wall_clock_s,
        .open = cut_open,
        .read_at = cut_read_at,
        .write = cut_write,
        .sync = cut_sync,
        .close = cut_close,
        .size = cut_size,
        .rename = cut_rename,
        .remove = cut_remove,
        .mkdir = cut_mkdir,
        .truncate = cut_truncate,
    };
    mf_agent *agent = v1 ? agent_with(fx, v1, n) : NULL;
    mf_agent_counters c;

    mf_agent_free(agent);
    fx->opts.platform = &ops;
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fake_assign(&fx->srv, "v2", v2, n, v2, n);
    fake_offer_delta(&fx->srv, delta, dlen, old, old_len);
    cut.budget = (long long)dlen + 2 * MIB;
    assert_true(mf_agent_step(agent) < 0);
    mf_agent_free(agent);
    if (v1) /* the old model is intact */
        assert_file_equals(fx, "models/detector/slot-a", v1, n);
    assert_true(
        exists(fx, v1 ? "models/detector/slot-b.part.ckpt" : "models/detector/slot-a.part.ckpt"));
    cut.budget = -1;
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", v1 ? 'b' : 'a');
    assert_file_equals(fx, v1 ? "models/detector/slot-b" : "models/detector/slot-a", v2, n);
    c = stats_of(agent);
    assert_int_equal(c.resumes, 1);
    assert_int_equal(c.delta_installs, 1);
    assert_int_equal(c.full_installs, 0);
    assert_int_equal(c.blob_bytes, 0); /* the complete delta on storage was reused */
    mf_agent_free(agent);
    test_free(delta);
}

static void test_agent_delivery__delta_apply_resumes_from_its_checkpoint(void **state)
{
    uint8_t *v1 = make_model(3 * MIB, 1), *v2 = make_model(3 * MIB, 2);

    cut_then_resume(*state, v1, v2, 3 * MIB);
    test_free(v1);
    test_free(v2);
}

/* ---- compressed full blobs (deltas from the empty image) ---- */

static void test_agent_delivery__compressed_first_install(void **state)
{
    struct fixture *fx = *state;
    struct mf_kit_alloc pa;
    mf_allocator alloc = mf_kit_alloc_init(&pa, -1, MF_KIT_ALLOC_FAIL_ONE);
    uint8_t *v1 = make_model(3 * MIB, 1);
    size_t dlen = 0;
    uint8_t *full = make_delta(&dlen, (const uint8_t *)"", 0, v1, 3 * MIB);
    mf_agent *agent = NULL;
    mf_agent_counters c;

    fx->opts.allocator = &alloc;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fake_assign(&fx->srv, "v1", v1, 3 * MIB, v1, 3 * MIB);
    fake_offer_delta(&fx->srv, full, dlen, (const uint8_t *)"", 0);
    step_expect(agent, MF_OK);
    /* the agent said it decodes them */
    assert_non_null(strstr(fx->srv.checkin_body, "\"compressed_full\":true"));
    assert_active(agent, "v1", 'a');
    assert_file_equals(fx, "models/detector/slot-a", v1, 3 * MIB);
    assert_int_equal(fx->srv.n_blob, 0); /* the raw blob was never fetched */
    assert_int_equal(fx->srv.n_delta_blob, 1);
    c = stats_of(agent);
    assert_int_equal(c.delta_installs, 1);
    assert_int_equal(c.full_installs, 0);
    assert_int_equal(c.blob_bytes, dlen);
    assert_false(exists(fx, "models/detector/slot-a.delta"));
    assert_false(exists(fx, "models/detector/slot-a.part.ckpt"));
    mf_agent_free(agent);
    print_message("3 MiB first install by a %zu-byte compressed full blob, peak heap %zu\n", dlen,
                  pa.peak);
    assert_true(pa.peak < 1024 * 1024); /* the delta decoder's one workspace, as for deltas */
    test_free(full);
    test_free(v1);
}

static void test_agent_delivery__corrupt_compressed_full_is_refused(void **state)
{
    struct fixture *fx = *state;
    uint8_t *v1 = make_model(MIB, 1), *other = make_model(MIB, 9);
    size_t dlen = 0, olen = 0;
    uint8_t *full = make_delta(&dlen, (const uint8_t *)"", 0, v1, MIB);
    /* Well-formed, but of other bytes: decodes, fails the signed chunk hashes. */
    uint8_t *wrong = make_delta(&olen, (const uint8_t *)"", 0, other, MIB);
    mf_agent *agent = NULL;

    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fake_assign(&fx->srv, "v1", v1, MIB, v1, MIB);
    /* A flipped bit in the middle of the payload: refused, nothing installed on a metered link. */
    full[dlen / 2] ^= 0x10;
    fake_offer_delta(&fx->srv, full, dlen, (const uint8_t *)"", 0);
    mf_agent_set_metered(agent, 1);
    assert_true(mf_agent_step(agent) < 0);
    assert_non_null(strstr(mf_agent_errmsg(agent), "metered"));
    assert_int_equal(fx->srv.n_blob, 0);
    assert_false(exists(fx, "models/detector/slot-a"));
    assert_false(exists(fx, "models/detector/slot-a.part"));
    /* The wrong image: refused as well, then the raw blob once the link is not metered. */
    fake_offer_delta(&fx->srv, wrong, olen, (const uint8_t *)"", 0);
    step_expect(agent, MF_E_SIGNATURE);
    assert_false(exists(fx, "models/detector/slot-a"));
    mf_agent_set_metered(agent, 0);
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(stats_of(agent).delta_fallbacks, 1);
    assert_active(agent, "v1", 'a');
    assert_file_equals(fx, "models/detector/slot-a", v1, MIB);
    mf_agent_free(agent);
    test_free(full);
    test_free(wrong);
    test_free(v1);
    test_free(other);
}

static void test_agent_delivery__compressed_full_resumes_after_a_power_cut(void **state)
{
    uint8_t *v1 = make_model(3 * MIB, 4);

    cut_then_resume(*state, NULL, v1, 3 * MIB);
    test_free(v1);
}

/* ---- memory ---- */

#if defined(__SANITIZE_ADDRESS__)
#define LARGE_MODEL (32u * MIB) /* ASan build: same code path, smaller model */
#else
#define LARGE_MODEL (256u * MIB)
#endif

static void test_agent_delivery__large_update_heap_is_bounded(void **state)
{
    struct fixture *fx = *state;
    struct mf_kit_alloc pa;
    mf_allocator alloc = mf_kit_alloc_init(&pa, -1, MF_KIT_ALLOC_FAIL_ONE);
    uint8_t *big = make_model(LARGE_MODEL, 3);
    mf_agent_model_status st = MF_AGENT_MODEL_STATUS_INIT;
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", big, LARGE_MODEL, big, LARGE_MODEL);
    fx->opts.allocator = &alloc;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_string_equal(st.sha256, fx->srv.sha256);
    assert_int_equal(st.size, LARGE_MODEL);
    mf_agent_free(agent);
    assert_int_equal(pa.live, 0);
    print_message("peak agent heap for a %u MiB full install: %zu bytes\n", LARGE_MODEL / MIB,
                  pa.peak);
    assert_true(pa.peak < 1024 * 1024);
    test_free(big);
}

static void test_agent_delivery__delta_heap_is_bounded(void **state)
{
    struct fixture *fx = *state;
    struct mf_kit_alloc pa;
    mf_allocator alloc = mf_kit_alloc_init(&pa, -1, MF_KIT_ALLOC_FAIL_ONE);
    uint8_t *v1 = make_model(4 * MIB, 1), *v2 = make_model(4 * MIB, 2);
    size_t dlen = 0;
    uint8_t *delta = make_delta(&dlen, v1, 4 * MIB, v2, 4 * MIB);
    mf_agent *agent = agent_with(fx, v1, 4 * MIB);

    mf_agent_free(agent);
    fx->opts.allocator = &alloc;
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    fake_assign(&fx->srv, "v2", v2, 4 * MIB, v2, 4 * MIB);
    fake_offer_delta(&fx->srv, delta, dlen, v1, 4 * MIB);
    step_expect(agent, MF_OK);
    assert_int_equal(stats_of(agent).delta_installs, 1);
    mf_agent_free(agent);
    print_message("peak agent heap for a 4 MiB delta install: %zu bytes\n", pa.peak);
    /* The decoder's workspace (one 512 KiB window, zstd's context and block buffer, the
     * stage: 0.78 MiB) plus ~110 KiB of the agent: the install bound of docs/agent.md. */
    assert_true(pa.peak < 1024 * 1024);
    test_free(delta);
    test_free(v1);
    test_free(v2);
}

/* The same cases with a write-behind buffer (mf-agent's setting, smaller): bytes wait in it
 * across cuts, bad chunks, restarts and 200-to-a-range, and must all reach the .part in
 * order before anything syncs or cuts it. 64 KiB: larger than libcurl's pieces, smaller than
 * a chunk. */
static int setup_buffered(void **state)
{
    int rc = setup(state);

    if (rc == 0)
        ((struct fixture *)*state)->opts.download_buffer = 64 * 1024;
    return rc;
}

static void test_agent_delivery__download_buffer_costs_its_size_in_heap(void **state)
{
    struct fixture *fx = *state;
    struct mf_kit_alloc pa;
    mf_allocator alloc = mf_kit_alloc_init(&pa, -1, MF_KIT_ALLOC_FAIL_ONE);
    uint8_t *big = make_model(8 * MIB, 4);
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", big, 8 * MIB, big, 8 * MIB);
    fx->opts.allocator = &alloc;
    fx->opts.download_buffer = 256 * 1024;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-a", big, 8 * MIB);
    mf_agent_free(agent);
    assert_int_equal(pa.live, 0);
    print_message("peak agent heap for an 8 MiB install, 256 KiB buffer: %zu bytes\n", pa.peak);
    /* test_agent__install_heap_is_bounded's 32 KiB without a buffer, plus the buffer. */
    assert_true(pa.peak >= 256 * 1024);
    assert_true(pa.peak < 256 * 1024 + 32 * 1024);
    /* Above MF_AGENT_DOWNLOAD_BUFFER_MAX: refused. */
    fx->opts.download_buffer = MF_AGENT_DOWNLOAD_BUFFER_MAX + 1;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_null(agent);
    /* Version 6 options end before the buffer (the device class was 6 first): whatever the
     * field holds is not read. */
    fx->opts.version = 6;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    mf_agent_free(agent);
    test_free(big);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn)                                                                                     \
    {                                                                                              \
#fn "__buffered", fn, setup_buffered, teardown, NULL                                       \
    }
    const struct CMUnitTest tests[] = {
        T(test_agent_delivery__cut_resumes_and_refetches_at_most_one_chunk),
        T(test_agent_delivery__last_attempt_with_progress_keeps_its_reason),
        T(test_agent_delivery__progress_survives_a_restart),
        T(test_agent_delivery__resume_reverifies_what_storage_holds),
        T(test_agent_delivery__200_to_a_range_restarts_from_zero),
        T(test_agent_delivery__wrong_content_range_is_refused),
        T(test_agent_delivery__new_etag_on_206_starts_over),
        T(test_agent_delivery__corrupt_chunk_is_fetched_again_alone),
        T(test_agent_delivery__chunk_tree_release_installs_and_resumes),
        T(test_agent_delivery__chunk_tree_release_survives_a_restart),
        T(test_agent_delivery__chunk_list_verifies_each_chunk),
        T(test_agent_delivery__chunk_list_survives_a_restart),
        T(test_agent_delivery__chunk_list_with_200_to_a_range),
        T(test_agent_delivery__bad_chunk_list_is_refused),
        T(test_agent_delivery__stall_is_cut_and_resumed),
        T(test_agent_delivery__oversized_206_is_refused),
        T(test_agent_delivery__bandwidth_cap_slows_the_download),
        T(test_agent_delivery__delta_is_applied_into_the_inactive_slot),
        T(test_agent_delivery__chunk_list_verifies_a_delta),
        T(test_agent_delivery__bad_delta_falls_back_unless_metered),
        T(test_agent_delivery__delta_apply_resumes_from_its_checkpoint),
        T(test_agent_delivery__compressed_first_install),
        T(test_agent_delivery__corrupt_compressed_full_is_refused),
        T(test_agent_delivery__compressed_full_resumes_after_a_power_cut),
        T(test_agent_delivery__large_update_heap_is_bounded),
        T(test_agent_delivery__delta_heap_is_bounded),
        T(test_agent_delivery__download_buffer_costs_its_size_in_heap),
        TB(test_agent_delivery__cut_resumes_and_refetches_at_most_one_chunk),
        TB(test_agent_delivery__progress_survives_a_restart),
        TB(test_agent_delivery__resume_reverifies_what_storage_holds),
        TB(test_agent_delivery__200_to_a_range_restarts_from_zero),
        TB(test_agent_delivery__new_etag_on_206_starts_over),
        TB(test_agent_delivery__corrupt_chunk_is_fetched_again_alone),
        TB(test_agent_delivery__stall_is_cut_and_resumed),
        TB(test_agent_delivery__oversized_206_is_refused),
    };
#undef TB
#undef T

    return cmocka_run_group_tests_name("agent_delivery", tests, world_setup, world_teardown);
}
