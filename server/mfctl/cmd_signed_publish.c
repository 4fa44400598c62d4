/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mfctl publish NAME VERSION FILE --release-key KEY.pem: the data team's one-step publish.
 * The release document is signed here, on the publisher's machine, with per-chunk SHA-256s
 * and the next sequence of the model (asked from the server unless --sequence says); the
 * server only ever sees the signed envelope. Then the blob is uploaded (staged) and the
 * release attached, which is when the server verifies it and the version becomes visible.
 * There is no unsigned publish: without --release-key the command refuses to run.
 */
#include "mfctl.h"
#include "mf_hex.h"
#include "cmd_keys.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define PUBLISH_MAX_KEYS 16

struct publish_args {
    const char *pos[3]; /* NAME VERSION FILE */
    int npos;
    const char *keys[PUBLISH_MAX_KEYS];
    size_t nkeys;
    uint64_t floor, chunk_size, sequence, expires;
    int json;
    int chunk_tree; /* --chunk-tree: the release carries the chunk root alone */
};

/* -1 to continue, else an exit code (usage printed). */
static int parse(struct publish_args *a, struct mfctl *c, int argc, char **argv)
{
    static const struct {
        const char *name;
        size_t off;
        uint64_t max;
    } nums[] = {
        {"--security-floor", offsetof(struct publish_args, floor), 1ull << 53},
        {"--chunk-size", offsetof(struct publish_args, chunk_size), UINT32_MAX},
        {"--sequence", offsetof(struct publish_args, sequence), 1ull << 53},
        {"--expires", offsetof(struct publish_args, expires), 1ull << 53},
    };

    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;

        if (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0) {
            (void)fputs(c->cmd->usage, c->out);
            return 0;
        }
        if (strcmp(k, "--json") == 0 || strcmp(k, "--chunk-tree") == 0) {
            *(k[2] == 'j' ? &a->json : &a->chunk_tree) = 1;
            continue;
        }
        if (k[0] != '-') {
            if (a->npos == 3)
                goto usage;
            a->pos[a->npos++] = k;
            continue;
        }
        if (!v)
            goto usage;
        i++;
        if (strcmp(k, "--release-key") == 0 && a->nkeys < PUBLISH_MAX_KEYS) {
            a->keys[a->nkeys++] = v;
            continue;
        }
        for (n = 0; n < sizeof(nums) / sizeof(nums[0]); n++) {
            if (strcmp(k, nums[n].name) == 0)
                break;
        }
        if (n == sizeof(nums) / sizeof(nums[0]) ||
            mfctl__parse_u64((uint64_t *)(void *)((char *)a + nums[n].off), v, nums[n].max) < 0 ||
            (n == 1 && a->chunk_size == 0) || (n == 2 && a->sequence == 0)) {
            (void)fprintf(c->err, "mfctl publish: bad option or value: %s %s\n%s", k, v,
                          c->cmd->usage);
            return 2;
        }
    }
    if (a->npos != 3)
        goto usage;
    return -1;
usage:
    (void)fprintf(c->err, "mfctl publish: expected NAME VERSION FILE and options\n%s",
                  c->cmd->usage);
    return 2;
}

/* The model's next release sequence: one above every sequence the server lists. */
static int next_sequence(uint64_t *out, struct mfctl *c, const char *model)
{
    struct mf_http_request req = {.method = "GET", .bearer = c->token};
    struct mf_http_response resp;
    const cJSON *m, *v;
    struct mf_dynbuf url;
    cJSON *doc = NULL;
    int err = mfctl__url(c, &url, "/v1/admin/models");

    *out = 1;
    if (err < 0)
        return err;
    mf_http__response_init(&resp, &c->http);
    req.url = (const char *)url.data;
    err = mf_http__perform(&c->http, &resp, &req);
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&c->http, &resp, "models");
    if (err >= 0)
        doc = mfctl__parse(c, (const char *)resp.body.data, resp.body.len, NULL);
    if (err >= 0 && !doc)
        err = MF_E_INVALID; /* the message is mfctl__parse()'s */
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");

        if (!cJSON_IsString(name) || strcmp(name->valuestring, model) != 0)
            continue;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "versions"))
        {
            const cJSON *seq = cJSON_GetObjectItemCaseSensitive(v, "sequence");

            if (cJSON_IsNumber(seq) && seq->valuedouble >= (double)*out)
                *out = (uint64_t)seq->valuedouble + 1;
        }
    }
    cJSON_Delete(doc);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&url);
    return err;
}

static int publish(struct mfctl *c, const struct publish_args *a, FILE *f, uint64_t size)
{
    mf_manifest_release_spec spec = {.name = a->pos[0],
                                     .version = a->pos[1],
                                     .sequence = a->sequence,
                                     .security_floor = a->floor,
                                     .chunk_size = (uint32_t)a->chunk_size,
                                     .chunk_tree_only = a->chunk_tree,
                                     .expires = a->expires};
    struct mf_http_response resp;
    mf_manifest_signer *s = NULL;
    char sha_hex[65], keyid[65] = "";
    uint8_t *env = NULL;
    size_t len = 0;
    int err = MF_OK;

    mf_http__response_init(&resp, &c->http);
    if (!spec.sequence)
        err = next_sequence(&spec.sequence, c, spec.name);
    if (err >= 0 && mf_manifest_signer_new(&s, &c->ctx.alloc) < 0)
        err = mf_fail(&c->ctx, MF_E_NOMEM, "no memory for the signer");
    if (err >= 0)
        err = mfctl__release_sign(&env, &len, keyid, &spec, c, s, a->pos[2],
                                  (const char *const *)a->keys, a->nkeys);
    mf_hex__encode(sha_hex, spec.sha256, sizeof(spec.sha256));
    if (err >= 0 && spec.size != size)
        err = mf_fail(&c->ctx, MF_E_IO, "%s changed while being signed", a->pos[2]);
    if (err >= 0)
        err = mfctl__upload(c, &resp, spec.name, spec.version, f, size, sha_hex);
    mf_http__response_free(&resp);
    mf_http__response_init(&resp, &c->http);
    if (err >= 0)
        err = mfctl__put_release(c, &resp, spec.name, spec.version, env, len);
    if (err >= 0 && a->json)
        (void)fprintf(c->out, "%s\n", resp.body.data ? (const char *)resp.body.data : "{}");
    else if (err >= 0)
        (void)fprintf(c->out,
                      "published %s %s (%llu bytes, sha256 %s)%s\n"
                      "  release sequence %llu, security floor %llu, %zu chunk(s) of %u bytes%s, "
                      "%zu-byte release signed by key %s\n",
                      spec.name, spec.version, (unsigned long long)size, sha_hex,
                      resp.status == 200 ? ", already released" : "",
                      (unsigned long long)spec.sequence, (unsigned long long)spec.security_floor,
                      spec.chunk_count, spec.chunk_size,
                      spec.chunk_tree_only ? " (chunk tree: root only)" : "", len, keyid);
    mf_http__response_free(&resp);
    mf_free(&c->ctx.alloc, env);
    mf_manifest_signer_free(s);
    return err;
}

int mfctl__cmd_publish(struct mfctl *c, int argc, char **argv)
{
    struct publish_args a;
    uint64_t size = 0;
    int rc, err;
    FILE *f;

    rc = parse(&a, c, argc, argv);
    if (rc >= 0)
        return rc;
    rc = mfctl__check_names(c, a.pos[0], a.pos[1]);
    if (rc)
        return rc;
    if (a.nkeys == 0) {
        (void)fprintf(c->err,
                      "mfctl publish: --release-key is required: devices install "
                      "signed releases only\n%s",
                      c->cmd->usage);
        return 2;
    }
    f = mfctl__open_model(c, a.pos[2], &size);
    if (!f)
        return 1;
    if (mfctl__connect(c) != 0) {
        (void)fclose(f);
        return 1;
    }
    err = publish(c, &a, f, size);
    (void)fclose(f);
    return err < 0 ? mfctl__report(c, err) : 0;
}
