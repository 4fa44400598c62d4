/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Released blobs outlive the samples that share their bytes: a device uploads samples whose
 * inputs are a released model and a delta, then its samples are deleted (by the device, and
 * by retention) and the released bytes are still served.
 */
#define _XOPEN_SOURCE 700 /* nanosleep */
#include "mf_test.h"
#include "server_fixture.h"
#include "mf/trust.h"
#include "offload/offload_srv.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One offload batch of cam-a with a single hard sample whose input is `input`. */
static void post_sample(int id, const uint8_t *input, size_t n)
{
    size_t enc_len = 4 * ((n + 2) / 3) + 1;
    char *enc = malloc(enc_len), *body = malloc(enc_len + 512);
    struct srvfx_resp r;

    assert_non_null(enc);
    assert_non_null(body);
    (void)EVP_EncodeBlock((unsigned char *)enc, input, (int)n);
    (void)snprintf(body, enc_len + 512,
                   "{\"batch_id\":\"%032x\",\"model\":\"det\",\"samples\":[{\"id\":\"%032x\","
                   "\"kind\":\"hard\",\"model\":\"det\",\"model_version\":\"v1\","
                   "\"method\":\"max_softmax\",\"score\":0.41,\"created_at\":1764500000,"
                   "\"output_kind\":\"logits\",\"output\":[1.0,0.6,-1.0],\"input\":\"%s\"}]}",
                   id, id, enc);
    if (srvfx_call(&r, "POST", "/v1/offload/batch", srvfx.device, body) != 200)
        fail_msg("batch: %ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "\"accepted\":1"));
    free(r.body);
    free(body);
    free(enc);
}

/* A device downloads `path` whole (200) and resumed (206), with the bytes of `data`. */
static void expect_download(const char *path, const uint8_t *data, size_t n)
{
    struct srvfx_resp r;

    assert_int_equal(srvfx_call(&r, "GET", path, srvfx.device, NULL), 200);
    assert_int_equal(r.len, n);
    assert_memory_equal(r.body, data, n);
    free(r.body);
    srvfx_call_port(&r, srvfx.port, "GET", path, srvfx.device, NULL, 0, "Range: bytes=10-");
    assert_int_equal(r.status, 206);
    assert_int_equal(r.len, n - 10);
    assert_memory_equal(r.body, data + 10, n - 10);
    free(r.body);
}

static int blob_file_exists(const char *sha)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", srvfx.data, sha, sha);
    return stat(path, &st) == 0;
}

/* A released model small enough to be a sample's input (MF_OFFLOAD_INPUT_MAX): "small" v1,
 * the first SMALL_SIZE bytes of v1. */
#define SMALL_SIZE 4096

static void publish_small(void)
{
    size_t len = 0;
    struct srvfx_resp r;
    uint8_t *env;

    srvfx_call_port(&r, srvfx.port, "PUT", "/v1/admin/models/small/versions/v1", srvfx.datat,
                    (const char *)srvfx.v1, SMALL_SIZE, NULL);
    assert_int_equal(r.status, 201);
    free(r.body);
    env = fx_release_of(&len, &srvfx_world, "small", "v1", 1, 0, srvfx.v1, SMALL_SIZE, 1024,
                        BY(K_REL0));
    srvfx_put_env("/v1/admin/models/small/versions/v1/release", env, len, srvfx.datat, 201);
}

/* Uploads the attack's samples (inputs: the released "small" model, the v1->v2 delta, bytes
 * of the device's own), then lets `delete_samples` delete them all, then checks the fleet
 * still downloads the model and the delta while the device's own input is gone. */
static void attack_then_delete(const char *delta_path, const uint8_t *delta, size_t delta_len,
                               int first_id, void (*delete_samples)(void))
{
    char model_path[128], small_sha[65], own_sha[65];
    uint8_t own[100];

    memset(own, 0x30 + first_id, sizeof(own));
    srvfx_sha256_hex(own_sha, own, sizeof(own));
    srvfx_sha256_hex(small_sha, srvfx.v1, SMALL_SIZE);
    post_sample(first_id, srvfx.v1, SMALL_SIZE);
    post_sample(first_id + 1, delta, delta_len);
    post_sample(first_id + 2, own, sizeof(own));
    assert_true(blob_file_exists(own_sha));
    /* The deletion keeps what was committed from its start on (blob/blob_gc.h): begin it a
     * clock tick after the uploads. */
    (void)nanosleep(&(struct timespec){0, 30000000L}, NULL);
    delete_samples();
    (void)snprintf(model_path, sizeof(model_path), "/v1/blobs/%s", small_sha);
    expect_download(model_path, srvfx.v1, SMALL_SIZE);
    expect_download(delta_path, delta, delta_len);
    assert_false(blob_file_exists(own_sha)); /* no leak: nothing else named it */
}

static void delete_by_device(void)
{
    struct srvfx_resp r;

    assert_int_equal(srvfx_call(&r, "DELETE", "/v1/admin/devices/cam-a/samples", srvfx.ops, NULL),
                     200);
    assert_non_null(strstr(r.body, "\"deleted\":3"));
    free(r.body);
}

/* The retention job's call (offload_jobs.c), on the store the server serves. */
static void delete_by_retention(void)
{
    char url[160], root[128];
    struct mf_store *s = NULL;
    struct mf_ctx ctx;
    int64_t deleted = 0;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    (void)snprintf(url, sizeof(url), "sqlite:%s/store.db", srvfx.data);
    (void)snprintf(root, sizeof(root), "%s/blobs", srvfx.data);
    assert_int_equal(mf_store__open(&s, &ctx, url, 0), MF_OK);
    if (mf_offsrv__delete(&deleted, s, &ctx, root, "", (int64_t)time(NULL) + 60) < 0)
        fail_msg("retention: %s", mf_ctx__errmsg(&ctx));
    assert_int_equal(deleted, 3);
    mf_store__close(s);
}

/* Blobs are content-addressed and shared: a device that uploads samples whose inputs are the
 * bytes of a released model and of a delta must not get them deleted with its samples (a
 * privacy deletion, or retention), which would leave the release naming a missing blob. */
static void test_server_blobs__sample_delete_keeps_released_blobs(void **state)
{
    char blob[160], from[65], fmt[16];
    double size = 0;
    struct srvfx_resp d;

    (void)state;
    srvfx_publish_det();
    publish_small();
    srvfx_wait_delta(blob, from, fmt, &size);
    assert_int_equal(srvfx_call(&d, "GET", blob, srvfx.device, NULL), 200);
    assert_true(d.len > 10 && d.len <= MODEL_SIZE);
    attack_then_delete(blob, (const uint8_t *)d.body, d.len, 1, delete_by_device);
    attack_then_delete(blob, (const uint8_t *)d.body, d.len, 4, delete_by_retention);
    free(d.body);
}

/* ---- the chunk list of a chunk-tree release (release_chunks.c) ---- */

#define TREE_CHUNK (64 * 1024)
#define TREE_CHUNKS (MODEL_SIZE / TREE_CHUNK)

static void sha256_of(uint8_t out[32], const void *p, size_t n)
{
    unsigned int len = 0;

    assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

/* A chunk-tree release (the root, no flat list) of "tree" `ver`: names `named` (its sha256
 * and size) with the chunk root of `hashed`, which a true release has equal to `named`. */
static uint8_t *tree_release(size_t *len, const char *ver, uint64_t seq, const uint8_t *named,
                             const uint8_t *hashed)
{
    uint8_t chunks[TREE_CHUNKS][32];
    mf_manifest_release_spec spec;

    for (size_t i = 0; i < TREE_CHUNKS; i++)
        sha256_of(chunks[i], hashed + i * TREE_CHUNK, TREE_CHUNK);
    memset(&spec, 0, sizeof(spec));
    spec.name = "tree";
    spec.version = ver;
    spec.sequence = seq;
    sha256_of(spec.sha256, named, MODEL_SIZE);
    spec.size = MODEL_SIZE;
    spec.chunk_size = TREE_CHUNK;
    spec.chunk_count = TREE_CHUNKS;
    spec.chunks = (const uint8_t(*)[32])chunks;
    spec.chunk_tree_only = 1;
    spec.created = 1;
    spec.expires = FX_EXPIRES;
    return fx_release(len, &srvfx_world, &spec, BY(K_REL0));
}

static void upload_tree(const char *ver, const uint8_t *data)
{
    char path[96];
    struct srvfx_resp r;

    (void)snprintf(path, sizeof(path), "/v1/admin/models/tree/versions/%s", ver);
    srvfx_call_port(&r, srvfx.port, "PUT", path, srvfx.datat, (const char *)data, MODEL_SIZE, NULL);
    assert_int_equal(r.status, 201);
    free(r.body);
}

/* A chunk-tree release is published with its chunk list stored as a blob of its own (a root
 * that does not describe the uploaded bytes is refused); the check-in names the list beside
 * the release, a device downloads it (whole and resumed), and it holds to the signed root.
 * A release with the flat list gets no chunk_list in the answer (devices read its list). */
static void test_server_blobs__chunk_tree_release_serves_its_list(void **state)
{
    uint8_t want[TREE_CHUNKS][32];
    char body[256], blob[160], sha[65], installed[16];
    struct srvfx_resp r, det;
    mf_manifest_release *rel = NULL;
    mf_trust *t;
    size_t len = 0;
    uint8_t *env;
    cJSON *doc, *a;

    (void)state;
    srvfx_publish_det();
    upload_tree("v1", srvfx.v1);
    /* The root of v2's chunks over v1's bytes: refused, the version stays staged. */
    env = tree_release(&len, "v1", 1, srvfx.v1, srvfx.v2);
    srvfx_call_port(&r, srvfx.port, "PUT", "/v1/admin/models/tree/versions/v1/release", srvfx.datat,
                    (const char *)env, len, NULL);
    mf_free(NULL, env);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "chunks_root does not describe the uploaded blob"));
    free(r.body);
    env = tree_release(&len, "v1", 1, srvfx.v1, srvfx.v1);
    srvfx_put_env("/v1/admin/models/tree/versions/v1/release", env, len, srvfx.datat, 201);

    (void)snprintf(body, sizeof(body),
                   "{\"nonce\":\"" NONCE "\",\"root_version\":1,\"keys_version\":1,"
                   "\"models\":[{\"name\":\"tree\"}]}");
    if (srvfx_call(&r, "POST", "/v1/checkin", srvfx.device, body) != 200)
        fail_msg("checkin: %ld %s", r.status, r.body);
    doc = cJSON_Parse(r.body);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "assignments"), 0);
    assert_non_null(a);
    (void)snprintf(
        blob, sizeof(blob), "%s",
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "chunk_list"), "blob")));
    (void)snprintf(
        sha, sizeof(sha), "%s",
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "chunk_list"), "sha256")));
    t = fx_trust(&srvfx_world, NULL);
    assert_int_equal(mf_trust_verify_release(
                         &rel, t,
                         (const uint8_t *)cJSON_GetStringValue(cJSON_GetObjectItem(a, "release")),
                         strlen(cJSON_GetStringValue(cJSON_GetObjectItem(a, "release"))), 0),
                     MF_OK);
    cJSON_Delete(doc);
    free(r.body);
    assert_null(rel->chunks);
    /* The list: the chunk hashes of the bytes, content-addressed, and they lead to the root. */
    for (size_t i = 0; i < TREE_CHUNKS; i++)
        sha256_of(want[i], srvfx.v1 + i * TREE_CHUNK, TREE_CHUNK);
    srvfx_sha256_hex(body, want, sizeof(want));
    assert_string_equal(sha, body);
    (void)snprintf(body, sizeof(body), "/v1/blobs/%s", sha);
    assert_string_equal(blob, body);
    expect_download(blob, (const uint8_t *)want, sizeof(want));
    assert_int_equal(mf_trust_check_chunk_list(t, rel, want, sizeof(want)), MF_OK);
    mf_manifest_release_free(rel);
    mf_trust_free(t);
    /* det's releases carry their flat list: no chunk_list for them. */
    srvfx_checkin(installed, "v1", NULL, &det);
    assert_string_equal(installed, "v2");
    assert_null(strstr(det.body, "chunk_list"));
    free(det.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_blobs__sample_delete_keeps_released_blobs),
        cmocka_unit_test(test_server_blobs__chunk_tree_release_serves_its_list),
    };

    return cmocka_run_group_tests(tests, srvfx_group_setup, srvfx_group_teardown);
}
