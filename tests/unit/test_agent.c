/* SPDX-License-Identifier: Apache-2.0 */
/*
 * End-to-end tests of libmf (sdk/agent/) against a fake mf-server written here: plain
 * sockets on 127.0.0.1, an ephemeral port, one thread serving one request per connection.
 * The fake follows docs/protocol.md, serves a signed trust chain (manifests/sign through
 * the manifest test fixture: root v1, keys v1, releases by the release key, assignments by
 * the director key for the nonce it was sent) and can misbehave on demand (wrong bytes,
 * extra bytes, a cut connection, 404, malformed or replayed check-in answers, releases
 * signed with the director key, releases below the device's floor).
 */
#include "mf_test.h"
#include "manifest_testutil.h"
#include "mf/sys/platform_posix.h"
#include "mf_agent_int.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENROLL_TOKEN "mfe_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CREDENTIAL "mfd_fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

enum blob_mode {
    BLOB_OK,       /* serve the bytes */
    BLOB_404,      /* unknown blob */
    BLOB_TRUNCATE, /* announce every byte, send half, close */
    BLOB_CHUNKED,  /* no Content-Length: chunked encoding, one chunk */
};

enum checkin_mode {
    CHECKIN_OK,
    CHECKIN_MALFORMED,  /* not JSON */
    CHECKIN_BAD_NONCE,  /* echoes another nonce */
    CHECKIN_REPLAY,     /* echoes the nonce, but the signed assignment holds an old one */
    CHECKIN_NO_RELEASE, /* an assignment without its release envelope */
};

/* The signing side of the trust chain, shared by every test (key generation is slow). */
static struct fx world;

struct fake_server {
    int listen_fd;
    int port;
    pthread_t thread;
    pthread_mutex_t lock;
    int stop;
    /* what to serve */
    const uint8_t *blob;
    size_t blob_len;
    char version[32];
    char sha256[65];
    uint64_t size; /* assigned size */
    enum blob_mode blob_mode;
    enum checkin_mode checkin_mode;
    /* the signed documents */
    uint8_t *keys_env;
    size_t keys_len;
    uint8_t *release_env;
    size_t release_len;
    uint8_t release_digest[32];
    uint64_t release_seq;    /* last release sequence signed */
    uint64_t assign_seq;     /* the director's sequence for the device */
    uint64_t floor;          /* security_floor of the next release */
    int release_by_director; /* 1: sign releases with the director key (a forgery) */
    /* what was seen */
    int n_enroll, n_checkin, n_blob, n_report;
    char report_status[32];
    char report_detail[256];
    char checkin_body[1024];
};

static void sha256_hex(char *out, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t d[32];

    mbedtls_sha256_ret(p, n, d, 0);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[64] = '\0';
}

/* Small models in 16-byte chunks (several per model), big ones in 1 MiB chunks. */
static uint32_t chunk_size_for(size_t len)
{
    return len > 4096 ? 1u << 20 : 16u;
}

/* A release of `data` signed with the release key (or the director key when forging). */
static void sign_release(struct fake_server *s, const char *version, const uint8_t *data,
                         size_t len)
{
    mf_free(NULL, s->release_env);
    s->release_env = fx_release_of(&s->release_len, &world, "detector", version, ++s->release_seq,
                                   s->floor, data, len, chunk_size_for(len),
                                   s->release_by_director ? BY(K_DIR) : BY(K_REL0));
    fx_digest(s->release_digest, s->release_env, s->release_len);
}

/* Assign `version` with the digest and size of `data`, and serve `served` bytes for it. */
static void fake_assign(struct fake_server *s, const char *version, const uint8_t *data, size_t len,
                        const uint8_t *served, size_t served_len)
{
    pthread_mutex_lock(&s->lock);
    (void)snprintf(s->version, sizeof(s->version), "%s", version);
    sha256_hex(s->sha256, data, len);
    s->size = len;
    s->blob = served;
    s->blob_len = served_len;
    sign_release(s, version, data, len);
    pthread_mutex_unlock(&s->lock);
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, strlen(body));

    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

/* Reads one request: head into `buf`, body after it; returns the body or NULL. */
static char *read_request(int fd, char *buf, size_t cap, size_t *body_len)
{
    size_t len = 0, need = 0;
    char *body = NULL;

    for (;;) {
        ssize_t r;

        if (body && len >= (size_t)(body - buf) + need)
            break;
        if (len + 1 >= cap)
            return NULL;
        r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0)
            return NULL;
        len += (size_t)r;
        buf[len] = '\0';
        if (!body) {
            char *end = strstr(buf, "\r\n\r\n");
            const char *cl;

            if (!end)
                continue;
            body = end + 4;
            cl = strstr(buf, "Content-Length: ");
            need = cl && cl < end ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
        }
    }
    body[need] = '\0';
    *body_len = need;
    return body;
}

static int authorized(const char *head)
{
    return strstr(head, "Authorization: Bearer " CREDENTIAL "\r\n") != NULL;
}

static void handle_enroll(struct fake_server *s, int fd, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(doc, "enrollment_token");

    s->n_enroll++;
    if (cJSON_IsString(tok) && strcmp(tok->valuestring, ENROLL_TOKEN) == 0)
        respond(fd, 201, "{\"device_id\":\"cam-1\",\"credential\":\"" CREDENTIAL "\"}");
    else
        respond(fd, 401, "{\"error\":\"unauthorized\",\"message\":\"enrollment token rejected\"}");
    cJSON_Delete(doc);
}

/* The detector assignment: plain hints plus the release and a director-signed assignment. */
static void add_detector(struct fake_server *s, cJSON *list, const char *nonce)
{
    char blob[80];
    cJSON *a = cJSON_CreateObject();
    uint8_t *env;
    size_t len;

    (void)snprintf(blob, sizeof(blob), "/v1/blobs/%s", s->sha256);
    cJSON_AddStringToObject(a, "model", "detector");
    cJSON_AddStringToObject(a, "version", s->version);
    cJSON_AddStringToObject(a, "sha256", s->sha256);
    cJSON_AddNumberToObject(a, "size", (double)s->size);
    cJSON_AddStringToObject(a, "blob", blob);
    if (s->checkin_mode != CHECKIN_NO_RELEASE)
        cJSON_AddStringToObject(a, "release", (const char *)s->release_env);
    env = fx_assignment(&len, &world, "cam-1", "detector", s->release_digest,
                        s->checkin_mode == CHECKIN_REPLAY ? FX_NONCE : nonce, ++s->assign_seq,
                        BY(K_DIR));
    cJSON_AddStringToObject(a, "assignment", (const char *)env);
    mf_free(NULL, env);
    cJSON_AddItemToArray(list, a);
}

static void handle_checkin(struct fake_server *s, int fd, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(doc, "nonce");
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(doc, "keys_version");
    cJSON *out, *list, *other;
    char *text;

    s->n_checkin++;
    (void)snprintf(s->checkin_body, sizeof(s->checkin_body), "%s", body);
    if (s->checkin_mode == CHECKIN_MALFORMED) {
        respond(fd, 200, "{\"nonce\": [unterminated");
        cJSON_Delete(doc);
        return;
    }
    if (!cJSON_IsString(nonce)) {
        respond(fd, 400, "{\"error\":\"bad_request\",\"message\":\"no nonce\"}");
        cJSON_Delete(doc);
        return;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "nonce",
                            s->checkin_mode == CHECKIN_BAD_NONCE ? "00" : nonce->valuestring);
    cJSON_AddNumberToObject(out, "poll_interval_s", 5);
    if (cJSON_GetNumberValue(kv) != 1) {
        cJSON *trust = cJSON_AddObjectToObject(out, "trust");

        cJSON_AddArrayToObject(trust, "roots");
        cJSON_AddStringToObject(trust, "keys", (const char *)s->keys_env);
    }
    list = cJSON_AddArrayToObject(out, "assignments");
    if (s->version[0]) {
        /* An untracked model first: the agent skips it. */
        other = cJSON_CreateObject();
        cJSON_AddStringToObject(other, "model", "other");
        cJSON_AddItemToArray(list, other);
        add_detector(s, list, nonce->valuestring);
    }
    text = cJSON_PrintUnformatted(out);
    respond(fd, 200, text);
    cJSON_free(text);
    cJSON_Delete(out);
    cJSON_Delete(doc);
}

static void handle_blob(struct fake_server *s, int fd)
{
    char head[256];
    int n;

    s->n_blob++;
    if (s->blob_mode == BLOB_404) {
        respond(fd, 404, "{\"error\":\"not_found\",\"message\":\"no such blob\"}");
        return;
    }
    if (s->blob_mode == BLOB_CHUNKED) {
        n = snprintf(head, sizeof(head),
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                     "Connection: close\r\n\r\n%zx\r\n",
                     s->blob_len);
        send_all(fd, head, (size_t)n);
        send_all(fd, s->blob, s->blob_len);
        send_all(fd, "\r\n0\r\n\r\n", 7);
        return;
    }
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                 s->blob_len);
    send_all(fd, head, (size_t)n);
    send_all(fd, s->blob, s->blob_mode == BLOB_TRUNCATE ? s->blob_len / 2 : s->blob_len);
}

static void handle_report(struct fake_server *s, int fd, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *detail = cJSON_GetObjectItemCaseSensitive(doc, "detail");

    s->n_report++;
    (void)snprintf(s->report_status, sizeof(s->report_status), "%s",
                   cJSON_IsString(st) ? st->valuestring : "?");
    (void)snprintf(s->report_detail, sizeof(s->report_detail), "%s",
                   cJSON_IsString(detail) ? detail->valuestring : "?");
    respond(fd, 204, "");
    cJSON_Delete(doc);
}

static void serve_one(struct fake_server *s, int fd)
{
    static char buf[64 * 1024];
    size_t body_len = 0;
    char *body = read_request(fd, buf, sizeof(buf), &body_len);

    if (!body)
        return;
    pthread_mutex_lock(&s->lock);
    if (strncmp(buf, "POST /v1/enroll ", 16) == 0)
        handle_enroll(s, fd, body);
    else if (!authorized(buf))
        respond(fd, 401, "{\"error\":\"unauthorized\",\"message\":\"unknown credential\"}");
    else if (strncmp(buf, "POST /v1/checkin ", 17) == 0)
        handle_checkin(s, fd, body);
    else if (strncmp(buf, "GET /v1/blobs/", 14) == 0)
        handle_blob(s, fd);
    else if (strncmp(buf, "POST /v1/report ", 16) == 0)
        handle_report(s, fd, body);
    else
        respond(fd, 404, "{\"error\":\"not_found\",\"message\":\"no route\"}");
    pthread_mutex_unlock(&s->lock);
}

static void *server_main(void *arg)
{
    struct fake_server *s = arg;

    for (;;) {
        struct pollfd pfd = {.fd = s->listen_fd, .events = POLLIN};
        int stop, fd;

        pthread_mutex_lock(&s->lock);
        stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        serve_one(s, fd);
        (void)shutdown(fd, SHUT_WR);
        (void)close(fd);
    }
    return NULL;
}

static void fake_start(struct fake_server *s)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t alen = sizeof(addr);

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->listen_fd >= 0);
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(s->listen_fd, 16), 0);
    assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *)&addr, &alen), 0);
    s->port = ntohs(addr.sin_port);
    s->keys_env = fx_keys_v1(&s->keys_len, &world);
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void fake_stop(struct fake_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    (void)close(s->listen_fd);
    pthread_mutex_destroy(&s->lock);
    mf_free(NULL, s->keys_env);
    mf_free(NULL, s->release_env);
}

/* ---- test fixture: a fake server, a state dir and the POSIX port ---- */

struct fixture {
    struct fake_server srv;
    char dir[64];
    char url[64];
    mf_platform_posix posix;
    mf_platform_ops ops;
    mf_agent_options opts;
    const char *models[2];
    int ready_calls;
    char ready_path[256];
    char ready_version[32];
    uint8_t *root_env; /* what the device is provisioned with */
    size_t root_len;
};

static void on_ready(void *payload, const char *model, const char *version, const char *path)
{
    struct fixture *fx = payload;

    assert_string_equal(model, "detector");
    fx->ready_calls++;
    (void)snprintf(fx->ready_path, sizeof(fx->ready_path), "%s", path);
    (void)snprintf(fx->ready_version, sizeof(fx->ready_version), "%s", version);
}

static void rmtree(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY);
    DIR *d;
    struct dirent *e;

    if (fd < 0) {
        (void)unlinkat(parent, name, 0);
        return;
    }
    d = fdopendir(fd);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rmtree(fd, e->d_name);
    }
    (void)closedir(d);
    (void)unlinkat(parent, name, AT_REMOVEDIR);
}

static void fresh_state_dir(struct fixture *fx)
{
    mf_platform_posix_close(&fx->posix);
    rmtree(AT_FDCWD, fx->dir);
    assert_int_equal(mf_platform_posix_init(&fx->ops, &fx->posix, fx->dir), MF_OK);
}

static int setup(void **state)
{
    struct fixture *fx = test_calloc(1, sizeof(*fx));

    fake_start(&fx->srv);
    (void)snprintf(fx->dir, sizeof(fx->dir), "/tmp/mf-agent-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    (void)snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:%d/", fx->srv.port);
    assert_int_equal(mf_platform_posix_init(&fx->ops, &fx->posix, fx->dir), MF_OK);
    assert_int_equal(mf_agent_options_init(&fx->opts, MF_AGENT_OPTIONS_VERSION), MF_OK);
    fx->models[0] = "detector";
    fx->models[1] = "classifier";
    fx->opts.server_url = fx->url;
    fx->opts.device_id = "cam-1";
    fx->opts.enrollment_token = ENROLL_TOKEN;
    fx->opts.state_dir = fx->dir;
    fx->opts.models = fx->models;
    fx->opts.n_models = 2;
    fx->opts.platform = &fx->ops;
    fx->opts.request_timeout_ms = 5000;
    fx->opts.connect_timeout_ms = 2000;
    fx->opts.stall_timeout_s = 5;
    fx->opts.ready_fn = on_ready;
    fx->opts.ready_payload = fx;
    fx->root_env = fx_root_v1(&fx->root_len, &world);
    fx->opts.trust_root = fx->root_env;
    fx->opts.trust_root_len = fx->root_len;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    fake_stop(&fx->srv);
    mf_platform_posix_close(&fx->posix);
    rmtree(AT_FDCWD, fx->dir);
    mf_free(NULL, fx->root_env);
    test_free(fx);
    return 0;
}

/* Reads a file of the state dir into a test_malloc'd buffer. */
static uint8_t *slurp(const struct fixture *fx, const char *name, size_t *len)
{
    char path[256];
    uint8_t *buf;
    FILE *f;
    long n;

    (void)snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
    f = fopen(path, "rb");
    if (!f)
        return NULL;
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    buf = test_malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    (void)fclose(f);
    *len = (size_t)n;
    return buf;
}

static int exists(const struct fixture *fx, const char *name)
{
    char path[256];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
    return stat(path, &st) == 0;
}

static void assert_file_equals(const struct fixture *fx, const char *name, const uint8_t *data,
                               size_t len)
{
    size_t got = 0;
    uint8_t *buf = slurp(fx, name, &got);

    assert_non_null(buf);
    assert_int_equal(got, len);
    assert_memory_equal(buf, data, len);
    test_free(buf);
}

static const uint8_t model_v1[] = "detector weights, version one\n";
static const uint8_t model_v2[] = "detector weights, version two: a little longer than one\n";

/* Runs one step and checks its result, showing the agent's message when it differs. */
static void step_expect(mf_agent *agent, int expect)
{
    int err = mf_agent_step(agent);

    if (err != expect)
        print_error("step returned %d: %s\n", err, mf_agent_errmsg(agent));
    assert_int_equal(err, expect);
}

static void assert_active(mf_agent *agent, const char *version, char slot)
{
    mf_agent_model_status st;

    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_true(st.installed);
    assert_string_equal(st.version, version);
    assert_int_equal(st.slot, slot);
}

/* Installs v1 through one step; used as the starting point of failure tests. */
static mf_agent *agent_with_v1(struct fixture *fx)
{
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_active(agent, "v1", 'a');
    return agent;
}

static void test_agent__enroll_checkin_install_report(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st;
    char sha[65], expect_path[256];
    struct stat sb;
    size_t len = 0;
    uint8_t *cred;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_string_equal(mf_agent_errmsg(agent), "");
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_checkin, 1);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(fx->srv.n_report, 1);
    assert_string_equal(fx->srv.report_status, "installed");
    /* The installed bytes are the served ones, in slot a, announced to the app. */
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    assert_false(exists(fx, "models/detector/slot-a.part"));
    assert_int_equal(fx->ready_calls, 1);
    assert_string_equal(fx->ready_version, "v1");
    (void)snprintf(expect_path, sizeof(expect_path), "%s/models/detector/slot-a", fx->dir);
    assert_string_equal(fx->ready_path, expect_path);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    sha256_hex(sha, model_v1, sizeof(model_v1));
    assert_string_equal(st.sha256, sha);
    assert_int_equal(st.size, sizeof(model_v1));
    assert_true(st.up_to_date);
    assert_int_equal(mf_agent_poll_interval_s(agent), 5);
    /* The untracked "other" assignment was ignored; "classifier" has nothing assigned. */
    assert_int_equal(mf_agent_status(&st, agent, "classifier"), MF_OK);
    assert_false(st.installed);
    assert_true(st.up_to_date);
    assert_int_equal(mf_agent_status(&st, agent, "other"), MF_E_NOTFOUND);
    /* Credential persisted privately. */
    cred = slurp(fx, "credential", &len);
    assert_non_null(cred);
    assert_string_equal((char *)cred, CREDENTIAL);
    test_free(cred);
    assert_int_equal(stat(expect_path, &sb), 0);
    (void)snprintf(expect_path, sizeof(expect_path), "%s/credential", fx->dir);
    assert_int_equal(stat(expect_path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    /* Second step: nothing to do, the check-in lists what runs. */
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_checkin, 2);
    assert_int_equal(fx->srv.n_blob, 1);
    assert_int_equal(fx->srv.n_report, 1);
    assert_non_null(strstr(fx->srv.checkin_body, "\"version\":\"v1\""));
    assert_non_null(strstr(fx->srv.checkin_body, sha));
    assert_int_equal(fx->ready_calls, 1);

    /* v2 goes to slot b; v1 stays as previous. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_file_equals(fx, "models/detector/slot-b", model_v2, sizeof(model_v2));
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    assert_int_equal(fx->ready_calls, 2);
    mf_agent_free(agent);

    /* A restarted agent reads credential and state back: no enrollment, no download. */
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_active(agent, "v2", 'b');
    step_expect(agent, MF_OK);
    assert_int_equal(fx->srv.n_enroll, 1);
    assert_int_equal(fx->srv.n_blob, 2);
    mf_agent_free(agent);
    mf_agent_free(NULL);
}

static void test_agent__state_file_records_active_and_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    char sha1[65], sha2[65];
    size_t len = 0;
    uint8_t *json;
    cJSON *doc;

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    json = slurp(fx, "models/detector/state.json", &len);
    assert_non_null(json);
    doc = cJSON_Parse((char *)json);
    assert_non_null(doc);
    sha256_hex(sha1, model_v1, sizeof(model_v1));
    sha256_hex(sha2, model_v2, sizeof(model_v2));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "active"), "slot")->valuestring, "b");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "active"), "sha256")->valuestring, sha2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "previous"), "version")->valuestring, "v1");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "previous"), "sha256")->valuestring, sha1);
    assert_false(exists(fx, "models/detector/state.json.tmp"));
    cJSON_Delete(doc);
    test_free(json);
    mf_agent_free(agent);
}

static void test_agent__wrong_enrollment_token_is_auth_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->opts.enrollment_token = "mfe_wrong";
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_AUTH);
    assert_non_null(strstr(mf_agent_errmsg(agent), "401"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "enrollment token rejected"));
    assert_int_equal(fx->srv.n_checkin, 0);
    assert_int_equal(fx->srv.n_blob, 0);
    assert_false(exists(fx, "credential"));
    assert_false(exists(fx, "models"));
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.installed);
    mf_agent_free(agent);
}

static void test_agent__no_token_no_credential_is_auth_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    fx->opts.enrollment_token = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_AUTH);
    assert_non_null(strstr(mf_agent_errmsg(agent), "no enrollment token"));
    assert_int_equal(fx->srv.n_enroll, 0);
    mf_agent_free(agent);
}

/* After a failed v2 install: v1 still active and intact, no .part, a failed report. */
static void assert_v1_survived(struct fixture *fx, mf_agent *agent, const char *detail)
{
    mf_agent_model_status st;

    assert_active(agent, "v1", 'a');
    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
    assert_false(exists(fx, "models/detector/slot-b.part"));
    assert_false(exists(fx, "models/detector/slot-b"));
    assert_string_equal(fx->srv.report_status, "failed");
    assert_non_null(strstr(fx->srv.report_detail, detail));
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_false(st.up_to_date);
    assert_true(st.last_error < 0);
    assert_non_null(strstr(st.last_errmsg, detail));
    assert_int_equal(fx->ready_calls, 1);
}

static void test_agent__sha256_mismatch_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    static uint8_t evil[sizeof(model_v2)];

    memcpy(evil, model_v2, sizeof(evil));
    evil[3] ^= 1;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), evil, sizeof(evil));
    step_expect(agent, MF_E_SIGNATURE);
    /* Caught at the first 16-byte chunk, against the signed chunk hash. */
    assert_non_null(strstr(mf_agent_errmsg(agent), "chunk 0 (bytes from 0) does not match its "
                                                   "signed sha256"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "v2"));
    assert_v1_survived(fx, agent, "does not match its signed sha256");
    /* A bad byte in a later chunk: the chunks before it pass, that one aborts. */
    evil[3] ^= 1;
    evil[40] ^= 1;
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), "chunk 2 (bytes from 32)"));
    assert_v1_survived(fx, agent, "download aborted");
    /* The server fixes the blob: the next step installs it. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    assert_string_equal(fx->srv.report_status, "installed");
    mf_agent_free(agent);
}

static void test_agent__more_bytes_than_assigned_are_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    static uint8_t longer[sizeof(model_v2) + 100];

    memcpy(longer, model_v2, sizeof(model_v2));
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), longer, sizeof(longer));
    step_expect(agent, MF_E_LIMIT);
    assert_v1_survived(fx, agent, "larger than allowed");
    /* Without a Content-Length the bound is enforced on the streamed bytes. */
    fx->srv.blob_mode = BLOB_CHUNKED;
    step_expect(agent, MF_E_LIMIT);
    assert_v1_survived(fx, agent, "sent more than 57 bytes");
    /* The same chunked framing with the right bytes installs. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

static void test_agent__cut_connection_keeps_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.blob_mode = BLOB_TRUNCATE;
    step_expect(agent, MF_E_NET);
    assert_v1_survived(fx, agent, "truncated");
    mf_agent_free(agent);
}

static void test_agent__short_blob_keeps_previous(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    /* Well-framed response, but fewer bytes than assigned. */
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, 10);
    step_expect(agent, MF_E_NET);
    assert_v1_survived(fx, agent, "ended after 10 of");
    mf_agent_free(agent);
}

static void test_agent__missing_blob_is_clear_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.blob_mode = BLOB_404;
    step_expect(agent, MF_E_NOTFOUND);
    assert_non_null(strstr(mf_agent_errmsg(agent), "HTTP 404"));
    assert_non_null(strstr(mf_agent_errmsg(agent), "/v1/blobs/"));
    assert_v1_survived(fx, agent, "no such blob");
    mf_agent_free(agent);
}

static void test_agent__malformed_checkin_is_invalid(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->srv.checkin_mode = CHECKIN_MALFORMED;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_INVALID);
    assert_non_null(strstr(mf_agent_errmsg(agent), "not valid JSON"));
    assert_int_equal(fx->srv.n_blob, 0);
    fx->srv.checkin_mode = CHECKIN_BAD_NONCE;
    step_expect(agent, MF_E_INVALID);
    assert_non_null(strstr(mf_agent_errmsg(agent), "nonce"));
    assert_int_equal(fx->srv.n_blob, 0);
    mf_agent_free(agent);
}

static void test_agent__unreachable_server_is_net_error(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;

    /* Port 1 on loopback: nothing listens there, the connection is refused at once. */
    (void)snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:1");
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_E_NET);
    assert_non_null(strstr(mf_agent_errmsg(agent), "127.0.0.1"));
    mf_agent_free(agent);
}

static int log_calls;
static char log_line[256];

static void capture_log(void *payload, int level, const char *module, const char *msg)
{
    (void)payload;
    (void)module;
    if (level == MF_LOG_ERROR) {
        log_calls++;
        (void)snprintf(log_line, sizeof(log_line), "%s", msg);
    }
}

static void test_agent__bad_options_are_rejected_with_a_message(void **state)
{
    static const char *const dup[] = {"a", "a"};
    static const char *const bad_name[] = {"../etc"};
    struct fixture *fx = *state;
    mf_agent_options o;
    mf_agent *agent = (mf_agent *)1;

    assert_int_equal(mf_agent_options_init(&o, 999), MF_E_INVALID);
    fx->opts.log_fn = capture_log;
    o = fx->opts;
    o.server_url = "ftp://127.0.0.1/";
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_null(agent);
    assert_non_null(strstr(log_line, "ftp://127.0.0.1/"));
    o = fx->opts;
    o.device_id = "cam 1";
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(log_line, "cam 1"));
    o = fx->opts;
    o.models = dup;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(log_line, "twice"));
    o = fx->opts;
    o.models = bad_name;
    o.n_models = 1;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_non_null(strstr(log_line, "../etc"));
    o = fx->opts;
    o.n_models = 0;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID);
    assert_int_equal(log_calls, 5);
}

static void test_agent__damaged_state_file_is_reported(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    char path[256];
    FILE *f;

    mf_agent_free(agent);
    (void)snprintf(path, sizeof(path), "%s/models/detector/state.json", fx->dir);
    f = fopen(path, "w");
    assert_non_null(f);
    (void)fputs("{\"format\":1,\"active\":{\"slot\":\"c\"}}", f);
    (void)fclose(f);
    fx->opts.log_fn = capture_log;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(log_line, "state.json"));
    assert_non_null(strstr(log_line, "slot"));
}

/* ---- the trust chain: every refusal keeps the running model and says why ---- */

/* A refused assignment: nothing downloaded, v1 kept, a failed report naming `why`. */
static void assert_refused(struct fixture *fx, mf_agent *agent, const char *why, int blobs)
{
    step_expect(agent, MF_E_SIGNATURE);
    assert_non_null(strstr(mf_agent_errmsg(agent), why));
    assert_int_equal(fx->srv.n_blob, blobs); /* verified BEFORE downloading */
    assert_v1_survived(fx, agent, why);
}

static void test_agent__release_signed_by_director_key_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    /* A stolen director key: it signs the assignment validly and a "release" too. */
    fx->srv.release_by_director = 1;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    assert_refused(fx, agent, "unknown or revoked key", 1);
    mf_agent_free(agent);
}

static void test_agent__missing_release_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);

    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.checkin_mode = CHECKIN_NO_RELEASE;
    step_expect(agent, MF_E_INVALID);
    assert_non_null(strstr(mf_agent_errmsg(agent), "no signed \"release\""));
    assert_int_equal(fx->srv.n_blob, 1);
    assert_active(agent, "v1", 'a');
    mf_agent_free(agent);
}

static void test_agent__replayed_assignment_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = agent_with_v1(fx);
    mf_agent_trust_state ts;

    mf_agent_trust_status(&ts, agent);
    assert_int_equal(ts.assignment_sequence, 1);
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    fx->srv.checkin_mode = CHECKIN_REPLAY;
    assert_refused(fx, agent, "wrong nonce", 1);
    /* A refused assignment does not advance the sequence. */
    mf_agent_trust_status(&ts, agent);
    assert_int_equal(ts.assignment_sequence, 1);
    /* An old sequence with the right nonce is a replay too. */
    fx->srv.checkin_mode = CHECKIN_OK;
    fx->srv.assign_seq = 0;
    assert_refused(fx, agent, "replayed sequence", 1);
    fx->srv.assign_seq = 10;
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

static void test_agent__release_below_floor_is_refused(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_model_status st;

    fx->srv.floor = 3;
    agent = agent_with_v1(fx);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.security_floor, 3); /* committed with the install */
    assert_int_equal(st.release_sequence, 1);
    fx->srv.floor = 2;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    assert_refused(fx, agent, "below security floor", 1);
    /* The floor survives a restart (trust.state), so does the refusal. */
    mf_agent_free(agent);
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
    assert_int_equal(st.security_floor, 3);
    assert_refused(fx, agent, "below security floor", 1);
    /* At the floor it installs (fleet rollback to an older release works the same way). */
    fx->srv.floor = 3;
    fake_assign(&fx->srv, "v2", model_v2, sizeof(model_v2), model_v2, sizeof(model_v2));
    step_expect(agent, MF_OK);
    assert_active(agent, "v2", 'b');
    mf_agent_free(agent);
}

static void test_agent__trust_root_is_required_and_state_persists(void **state)
{
    struct fixture *fx = *state;
    mf_agent *agent = NULL;
    mf_agent_trust_state ts;
    mf_agent_options o = fx->opts;
    uint8_t *bad;
    size_t len = 0;

    fx->opts.log_fn = capture_log;
    o = fx->opts;
    o.trust_root = NULL;
    o.trust_root_len = 0;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_INVALID); /* no trust on first use */
    assert_null(agent);
    assert_non_null(strstr(log_line, "trust_root"));
    /* A root not signed by its own root keys is refused at provisioning. */
    o = fx->opts;
    bad = fx_root(&len, &world, 1, FX_EXPIRES, BY(K_ROOT0, K_ROOT1, K_ROOT2), 2, BY(K_KEYS), 1,
                  BY(K_EVIL));
    o.trust_root = bad;
    o.trust_root_len = len;
    assert_int_equal(mf_agent_new(&agent, &o), MF_E_SIGNATURE);
    assert_non_null(strstr(log_line, "provisioned trust root refused"));
    assert_false(exists(fx, "trust.state"));
    mf_free(NULL, bad);

    agent = agent_with_v1(fx);
    mf_agent_trust_status(&ts, agent);
    assert_int_equal(ts.root_version, 1);
    assert_int_equal(ts.keys_version, 1);
    assert_true(exists(fx, "trust.state"));
    assert_false(exists(fx, "trust.state.tmp"));
    /* The first check-in had no keys document yet; the next one names what it trusts. */
    assert_non_null(strstr(fx->srv.checkin_body, "\"root_version\":1,\"keys_version\":0"));
    step_expect(agent, MF_OK);
    assert_non_null(strstr(fx->srv.checkin_body, "\"root_version\":1,\"keys_version\":1"));
    mf_agent_free(agent);
    /* Restarted: the saved state wins; the provisioned root is not needed any more. */
    agent = NULL;
    o = fx->opts;
    o.trust_root = "x";
    o.trust_root_len = 1;
    assert_int_equal(mf_agent_new(&agent, &o), MF_OK);
    mf_agent_trust_status(&ts, agent);
    assert_int_equal(ts.keys_version, 1);
    assert_int_equal(ts.assignment_sequence, 2); /* two check-ins, one assignment each */
    mf_agent_free(agent);
    /* An edited state file is refused, not trusted. */
    {
        char path[256];
        FILE *f;

        (void)snprintf(path, sizeof(path), "%s/trust.state", fx->dir);
        f = fopen(path, "r+b");
        assert_non_null(f);
        assert_int_equal(fseek(f, 20, SEEK_SET), 0);
        assert_int_equal(fputc('X', f), 'X');
        (void)fclose(f);
    }
    agent = NULL;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_E_INVALID);
    assert_non_null(strstr(log_line, "trust.state refused"));
}

/* ---- fault injection: fail the Nth allocation, for every N, across new + one step ---- */

struct failing_alloc {
    int calls;
    int fail_at;
};

static void *failing_alloc_fn(void *payload, size_t size)
{
    struct failing_alloc *c = payload;

    if (c->calls++ == c->fail_at)
        return NULL;
    return test_malloc(size);
}

static void failing_free_fn(void *payload, void *ptr)
{
    (void)payload;
    test_free(ptr);
}

static void test_agent__every_allocation_failure_is_clean(void **state)
{
    struct fixture *fx = *state;
    struct failing_alloc fa = {0, 0};
    mf_allocator alloc = {failing_alloc_fn, failing_free_fn, &fa};
    int done = 0, failures = 0;

    fake_assign(&fx->srv, "v1", model_v1, sizeof(model_v1), model_v1, sizeof(model_v1));
    fx->opts.allocator = &alloc;
    for (int n = 0; !done && n < 500; n++) {
        mf_agent *agent = NULL;
        mf_agent_model_status st;
        int err;

        fresh_state_dir(fx);
        fa.calls = 0;
        fa.fail_at = n;
        err = mf_agent_new(&agent, &fx->opts);
        if (err == MF_OK) {
            err = mf_agent_step(agent);
            if (err < 0) {
                /* A clean error: a message, and nothing half-installed is active. */
                assert_true(mf_agent_errmsg(agent)[0] != '\0');
                assert_int_equal(mf_agent_status(&st, agent, "detector"), MF_OK);
                assert_false(exists(fx, "models/detector/slot-a.part"));
                if (st.installed)
                    assert_file_equals(fx, "models/detector/slot-a", model_v1, sizeof(model_v1));
            }
            mf_agent_free(agent);
        } else {
            assert_null(agent);
        }
        if (err == MF_OK) {
            done = fa.calls <= n; /* the failure point was never reached */
            if (!done)
                failures++; /* the failed allocation was absorbed (e.g. a log line) */
        } else {
            assert_int_equal(err, MF_E_NOMEM);
            failures++;
        }
    }
    assert_true(done);
    assert_true(failures > 10);
}

/* ---- bounded memory: the blob streams to storage, it is never held in RAM ---- */

struct peak_alloc {
    size_t live, peak;
};

struct peak_hdr {
    size_t size;
    size_t pad; /* keeps the payload 16-byte aligned */
};

static void *peak_alloc_fn(void *payload, size_t size)
{
    struct peak_alloc *pa = payload;
    struct peak_hdr *h = test_malloc(sizeof(*h) + size);

    h->size = size;
    pa->live += size;
    if (pa->live > pa->peak)
        pa->peak = pa->live;
    return h + 1;
}

static void peak_free_fn(void *payload, void *ptr)
{
    struct peak_hdr *h = (struct peak_hdr *)ptr - 1;

    ((struct peak_alloc *)payload)->live -= h->size;
    test_free(h);
}

static void test_agent__install_heap_is_bounded(void **state)
{
    enum { BIG = 4 * 1024 * 1024 };
    struct fixture *fx = *state;
    struct peak_alloc pa = {0, 0};
    mf_allocator alloc = {peak_alloc_fn, peak_free_fn, &pa};
    uint8_t *big = test_malloc(BIG);
    mf_agent *agent = NULL;

    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    fake_assign(&fx->srv, "v1", big, BIG, big, BIG);
    fx->opts.allocator = &alloc;
    assert_int_equal(mf_agent_new(&agent, &fx->opts), MF_OK);
    step_expect(agent, MF_OK);
    assert_file_equals(fx, "models/detector/slot-a", big, BIG);
    mf_agent_free(agent);
    assert_int_equal(pa.live, 0);
    print_message("peak agent heap for a %d-byte install: %zu bytes\n", BIG, pa.peak);
    assert_true(pa.peak < 32 * 1024); /* the 4 MiB blob never passes through the allocator */
    test_free(big);
}

/* ---- parsers, table-driven (the fake server only sends well-formed answers) ---- */

#define NONCE "00112233445566778899aabbccddeeff"
#define SHA "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define ASSIGN(fields) "{\"nonce\":\"" NONCE "\",\"assignments\":[{" fields "}]}"
#define ENVS ",\"release\":\"{}\",\"assignment\":\"{}\""
#define GOOD_FIELDS(size, blob)                                                                    \
    "\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA "\",\"size\":" size              \
    ",\"blob\":\"" blob "\"" ENVS

static void test_agent__checkin_parser_rejects_bad_answers(void **state)
{
    static const char *const models[] = {"detector", "classifier"};
    static const struct {
        const char *json;
        int code;
        const char *msg;
    } cases[] = {
        {ASSIGN(GOOD_FIELDS("5", "/v1/blobs/" SHA)), MF_OK, ""},
        {"{\"nonce\":\"" NONCE "\",\"assignments\":[]}", MF_OK, ""},
        {"{\"nonce\":\"" NONCE "0\",\"assignments\":[]}", MF_E_INVALID, "nonce"},
        {"{\"assignments\":[]}", MF_E_INVALID, "nonce"},
        {"{\"nonce\":\"" NONCE "\"}", MF_E_INVALID, "\"assignments\""},
        {"{\"nonce\":\"" NONCE "\",\"poll_interval_s\":-1,\"assignments\":[]}", MF_E_INVALID,
         "poll_interval_s"},
        {ASSIGN(GOOD_FIELDS("-1", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("1.5", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("\"5\"", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("1e300", "/b")), MF_E_INVALID, "assignment.size"},
        {ASSIGN(GOOD_FIELDS("5", "http://evil.example/x")), MF_E_INVALID, "not a server path"},
        {ASSIGN(GOOD_FIELDS("5", "/v1/../../etc/passwd")), MF_E_INVALID, "not a server path"},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v 2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\""),
         MF_E_INVALID, "assignment.version"},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"ABC\",\"size\":1,"
                "\"blob\":\"/b\""),
         MF_E_INVALID, "assignment.sha256"},
        {"{\"nonce\":\"" NONCE
         "\",\"assignments\":[{" GOOD_FIELDS("1", "/b") "},{" GOOD_FIELDS("1", "/b") "}]}",
         MF_E_INVALID, "twice"},
        {"[]", MF_E_INVALID, "not a JSON object"},
        /* Trust documents: envelopes must be there, as strings, and bounded. */
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\",\"assignment\":\"{}\""),
         MF_E_INVALID, "no signed \"release\""},
        {ASSIGN("\"model\":\"detector\",\"version\":\"v2\",\"sha256\":\"" SHA
                "\",\"size\":1,\"blob\":\"/b\",\"release\":\"{}\",\"assignment\":{}"),
         MF_E_INVALID, "no signed \"assignment\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"roots\":[7]},\"assignments\":[]}", MF_E_INVALID,
         "trust.roots[0]"},
        {"{\"nonce\":\"" NONCE "\",\"trust\":[],\"assignments\":[]}", MF_E_INVALID, "\"trust\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"keys\":1},\"assignments\":[]}", MF_E_INVALID,
         "\"keys\""},
        {"{\"nonce\":\"" NONCE "\",\"trust\":{\"roots\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
         "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]},\"assignments\":[]}",
         MF_E_LIMIT, "more than 16 root rotations"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mf_agent_assignment out[2];
        struct mf_agent_trust_docs trust;
        struct cJSON *doc = NULL;
        struct mf_ctx ctx;
        size_t n = 7;
        long poll = 0;
        int err;

        mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
        err = mf_agent__checkin_parse(&ctx, out, &n, &poll, &trust, &doc, cases[i].json,
                                      strlen(cases[i].json), NONCE, models, 2);
        if (err != cases[i].code || !strstr(ctx.errmsg, cases[i].msg))
            print_error("case %zu: %d \"%s\"\n", i, err, ctx.errmsg);
        assert_int_equal(err, cases[i].code);
        assert_non_null(strstr(ctx.errmsg, cases[i].msg));
        if (err < 0) {
            assert_int_equal(n, 0);
            assert_null(doc);
        } else if (n) {
            assert_string_equal(out[0].release_env, "{}"); /* borrowed from the tree */
        }
        cJSON_Delete(doc);
    }
}

static void test_agent__state_parser_round_trip_and_rejects(void **state)
{
    static const char *const bad[] = {
        "{\"format\":2,\"active\":null}",
        "{\"format\":1,\"active\":{\"slot\":\"c\",\"version\":\"v\",\"sha256\":\"" SHA
        "\",\"size\":1}}",
        "{\"format\":1,\"active\":{\"slot\":\"a\",\"version\":\"v\",\"sha256\":\"" SHA
        "\",\"size\":1},\"previous\":{\"slot\":\"a\",\"version\":\"w\",\"sha256\":\"" SHA
        "\",\"size\":2}}",
        "{\"format\":1,\"active\":7}",
        "not json",
    };
    struct mf_agent_model_state st = {{'b', "v2", SHA, 42}, {'a', "v1", SHA, 7}}, back;
    struct mf_dynbuf buf;
    struct mf_ctx ctx;

    (void)state;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "test");
    mf_dynbuf__init(&buf, NULL, 4096);
    assert_int_equal(mf_agent__state_format(&buf, &st), MF_OK);
    assert_int_equal(mf_agent__state_parse(&ctx, &back, (char *)buf.data, buf.len), MF_OK);
    assert_memory_equal(&st, &back, sizeof(st));
    mf_dynbuf__free(&buf);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mf_agent__state_parse(&ctx, &back, bad[i], strlen(bad[i])), MF_E_INVALID);
        assert_int_equal(back.active.slot, 0);
    }
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_agent__enroll_checkin_install_report),
        T(test_agent__state_file_records_active_and_previous),
        T(test_agent__wrong_enrollment_token_is_auth_error),
        T(test_agent__no_token_no_credential_is_auth_error),
        T(test_agent__sha256_mismatch_is_refused),
        T(test_agent__more_bytes_than_assigned_are_refused),
        T(test_agent__cut_connection_keeps_previous),
        T(test_agent__short_blob_keeps_previous),
        T(test_agent__missing_blob_is_clear_error),
        T(test_agent__malformed_checkin_is_invalid),
        T(test_agent__unreachable_server_is_net_error),
        T(test_agent__bad_options_are_rejected_with_a_message),
        T(test_agent__damaged_state_file_is_reported),
        T(test_agent__every_allocation_failure_is_clean),
        T(test_agent__install_heap_is_bounded),
        T(test_agent__release_signed_by_director_key_is_refused),
        T(test_agent__missing_release_is_refused),
        T(test_agent__replayed_assignment_is_refused),
        T(test_agent__release_below_floor_is_refused),
        T(test_agent__trust_root_is_required_and_state_persists),
        cmocka_unit_test(test_agent__checkin_parser_rejects_bad_answers),
        cmocka_unit_test(test_agent__state_parser_round_trip_and_rejects),
    };
#undef T
    int rc;

    fx_init(&world);
    rc = cmocka_run_group_tests_name("agent", tests, NULL, NULL);
    fx_free(&world);
    return rc;
}
