/* SPDX-License-Identifier: Apache-2.0 */
/* Counting connections for the limit and keep-alive decisions, and the connection rules
 * that close slow ones (see http_conns.h). */
#include "http/http_conns.h"

#include "http/http_metrics.h"
#include "common/worker_thread.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define SWEEP_MS 250u       /* how late past its deadline a connection may be closed */
#define LOG_EVERY_MS 10000u /* at most one log line per rule this often */
#define NO_SLOT UINT_MAX

/* The request phase of a connection: the low 2 bits of its phase word, the rest the
 * CLOCK_MONOTONIC milliseconds at which the phase began (one atomic word, so the sweeper
 * never pairs one phase with another's start). */
enum {
    PHASE_HEADERS = 1, /* the client's turn: a request header is due */
    PHASE_BODY = 2,    /* the client's turn: a body is due (none for most GETs) */
    PHASE_SERVER = 3   /* the server's turn: handled, suspended or answered; no rule */
};

struct mf_httpd_conn {
    /* Written by the MHD worker serving the connection, read by the sweeper. */
    atomic_uint_least64_t phase;
    atomic_uint_least64_t body; /* body bytes of the current request */
    /* Under the guard's lock (notify callback and sweeper). */
    int fd;             /* -1: the slot is free */
    int counted;        /* holds one count of `addr` in the address table */
    int closing;        /* shut down by a rule (or refused): MHD closes it next */
    unsigned next_free; /* free list */
    uint8_t addr[16];   /* client address, IPv4 as IPv4-mapped IPv6 */
    /* The sweeper's own: the body rate window of phase word `win_phase`. */
    uint64_t win_phase, win_ms, win_bytes;
};

/* Open addressing with linear probing; count 0 marks an empty entry. */
struct addr_count {
    uint8_t key[16];
    uint32_t count;
};

struct mf_conn_guard {
    struct mf_conn_rules rules;
    struct mf_metrics *metrics;
    mf_log_fn log_fn;
    void *log_payload;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int stopping;
    unsigned cap, free_head;
    struct mf_httpd_conn *slots;
    size_t addr_mask; /* table size - 1, a power of two >= 2 x cap: half full at most */
    struct addr_count *addrs;
    uint64_t seed[2]; /* the address hash's key: clients cannot aim at one probe chain */
    /* Log state per rule, under the lock: closings not logged yet, the last address. */
    uint64_t pending[MF_CONN_RULES], logged_ms[MF_CONN_RULES];
    uint8_t last_addr[MF_CONN_RULES][16];
};

static const char *const rule_names[MF_CONN_RULES] = {"header_timeout", "body_rate", "per_address"};

const char *mf_httpd__conn_rule_name(enum mf_conn_rule rule)
{
    return rule < MF_CONN_RULES ? rule_names[rule] : "unknown";
}

void mf_httpd__conns_init(struct mf_httpd_conns *c, unsigned limit)
{
    atomic_init(&c->open, 0);
    c->limit = limit ? limit : 1;
    c->keep = c->limit / 2;
    c->guard = NULL;
}

unsigned mf_httpd__conns_mhd_limit(unsigned limit)
{
    /* A quarter more, at least 16: enough for a burst to be told 503 while the served
     * connections finish; MHD splits its limit over the worker threads, so not less. */
    return limit + limit / 4 + 16;
}

static uint64_t ms_of(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000u + (uint64_t)t->tv_nsec / 1000000u;
}

static uint64_t now_ms(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return ms_of(&t);
}

static uint64_t phase_word(uint64_t ms, unsigned phase)
{
    return ms << 2 | phase;
}

/* --- the address table (under the guard's lock) --- */

static size_t addr_home(const struct mf_conn_guard *g, const uint8_t key[16])
{
    uint64_t a, b, h;

    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    h = (a ^ g->seed[0]) * 0x9e3779b97f4a7c15u;
    h = (h ^ (h >> 29) ^ b ^ g->seed[1]) * 0xbf58476d1ce4e5b9u;
    return (size_t)(h ^ (h >> 32)) & g->addr_mask;
}

/* The entry counting `key`; an empty one set to `key` when there is none. Never full:
 * the table has twice as many entries as there can be tracked connections. */
static struct addr_count *addr_entry(struct mf_conn_guard *g, const uint8_t key[16])
{
    for (size_t i = addr_home(g, key);; i = (i + 1) & g->addr_mask) {
        struct addr_count *e = &g->addrs[i];

        if (!e->count) {
            memcpy(e->key, key, 16);
            return e;
        }
        if (memcmp(e->key, key, 16) == 0)
            return e;
    }
}

/* Drops one count of `key`; an entry falling to 0 is deleted by shifting the entries of
 * its probe chain back (no tombstones, so chains never fill up with them). */
static void addr_release(struct mf_conn_guard *g, const uint8_t key[16])
{
    struct addr_count *e = addr_entry(g, key);
    size_t hole, j;

    assert(e->count > 0);
    if (--e->count)
        return;
    hole = (size_t)(e - g->addrs);
    for (j = (hole + 1) & g->addr_mask; g->addrs[j].count; j = (j + 1) & g->addr_mask) {
        size_t home = addr_home(g, g->addrs[j].key);

        /* Entry j may fill the hole when the hole lies on its path from home to j. */
        if (((j - home) & g->addr_mask) >= ((j - hole) & g->addr_mask)) {
            g->addrs[hole] = g->addrs[j];
            g->addrs[j].count = 0;
            hole = j;
        }
    }
}

static void addr_key(uint8_t key[16], const struct sockaddr *sa)
{
    memset(key, 0, 16);
    if (sa && sa->sa_family == AF_INET) {
        key[10] = key[11] = 0xff; /* ::ffff:a.b.c.d, as a dual-stack socket reports it */
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static void addr_text(char *out, size_t size, const uint8_t key[16])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (memcmp(key, mapped, sizeof(mapped)) == 0)
        (void)inet_ntop(AF_INET, key + 12, out, (socklen_t)size);
    else
        (void)inet_ntop(AF_INET6, key, out, (socklen_t)size);
}

/* --- closing by a rule (under the lock) --- */

static void close_by_rule(struct mf_conn_guard *g, struct mf_httpd_conn *k, enum mf_conn_rule rule)
{
    /* The descriptor is still MHD's: the close notification, which frees the slot before
     * MHD closes it, waits for this lock. */
    (void)shutdown(k->fd, SHUT_RDWR);
    k->closing = 1;
    mf_metrics__count(&g->metrics->conns_closed[rule], 1);
    g->pending[rule]++;
    memcpy(g->last_addr[rule], k->addr, 16);
}

static void on_started(struct mf_conn_guard *g, struct MHD_Connection *conn, void **ctx)
{
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ca =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct mf_httpd_conn *k;
    uint64_t now = now_ms();

    (void)pthread_mutex_lock(&g->lock);
    if (!fd || g->free_head == NO_SLOT) {
        /* Cannot happen: MHD holds at most cap connections. Untracked, it is served. */
        (void)pthread_mutex_unlock(&g->lock);
        return;
    }
    k = &g->slots[g->free_head];
    g->free_head = k->next_free;
    k->fd = fd->connect_fd;
    k->counted = 0;
    k->closing = 0;
    k->win_phase = 0;
    addr_key(k->addr, ca ? ca->client_addr : NULL);
    atomic_store_explicit(&k->body, 0, memory_order_relaxed);
    atomic_store_explicit(&k->phase, phase_word(now, PHASE_HEADERS), memory_order_relaxed);
    if (g->rules.per_addr) {
        struct addr_count *e = addr_entry(g, k->addr);

        if (e->count >= g->rules.per_addr) {
            close_by_rule(g, k, MF_CONN_RULE_PER_ADDR);
        } else {
            e->count++;
            k->counted = 1;
        }
    }
    (void)pthread_mutex_unlock(&g->lock);
    *ctx = k;
}

/* Refuses at accept a client already at the cap, before MHD makes a connection of it: a
 * client reconnecting in a loop then costs an accept and a close, not a slot, a poll entry
 * and a sweep. The count itself moves only in the notifications (MHD may drop an accepted
 * socket without one), so two accepts racing past the check are caught in on_started. */
static int addr_at_cap(struct mf_conn_guard *g, const struct sockaddr *sa)
{
    uint8_t key[16];
    int over;

    addr_key(key, sa);
    (void)pthread_mutex_lock(&g->lock);
    over = addr_entry(g, key)->count >= g->rules.per_addr;
    if (over) {
        mf_metrics__count(&g->metrics->conns_closed[MF_CONN_RULE_PER_ADDR], 1);
        g->pending[MF_CONN_RULE_PER_ADDR]++;
        memcpy(g->last_addr[MF_CONN_RULE_PER_ADDR], key, 16);
    }
    (void)pthread_mutex_unlock(&g->lock);
    return over;
}

enum MHD_Result mf_httpd__accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    struct mf_httpd_conns *c = cls;

    (void)len;
    if (!c->guard || !c->guard->rules.per_addr || !addr)
        return MHD_YES;
    return addr_at_cap(c->guard, addr) ? MHD_NO : MHD_YES;
}

static void on_closed(struct mf_conn_guard *g, void **ctx)
{
    struct mf_httpd_conn *k = *ctx;

    if (!k)
        return;
    (void)pthread_mutex_lock(&g->lock);
    if (k->counted)
        addr_release(g, k->addr);
    k->fd = -1;
    k->next_free = g->free_head;
    g->free_head = (unsigned)(k - g->slots);
    (void)pthread_mutex_unlock(&g->lock);
    *ctx = NULL;
}

void mf_httpd__on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct mf_httpd_conns *c = cls;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add_explicit(&c->open, 1, memory_order_relaxed);
        if (c->guard)
            on_started(c->guard, conn, socket_context);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (c->guard)
            on_closed(c->guard, socket_context);
        atomic_fetch_sub_explicit(&c->open, 1, memory_order_relaxed);
    }
}

int mf_httpd__conns_over(const struct mf_httpd_conns *c)
{
    return c && atomic_load_explicit(&c->open, memory_order_relaxed) > c->limit;
}

int mf_httpd__conns_close_after(const struct mf_httpd_conns *c)
{
    return c && atomic_load_explicit(&c->open, memory_order_relaxed) > c->keep;
}

/* --- the router's marks --- */

struct mf_httpd_conn *mf_httpd__conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return i ? i->socket_context : NULL;
}

void mf_httpd__conn_headers_in(struct mf_httpd_conn *k, const struct timespec *at)
{
    if (!k)
        return;
    /* Bytes first: a sweeper that sees the body phase sees the count restarted. */
    atomic_store_explicit(&k->body, 0, memory_order_relaxed);
    atomic_store_explicit(&k->phase, phase_word(ms_of(at), PHASE_BODY), memory_order_release);
}

void mf_httpd__conn_body(struct mf_httpd_conn *k, size_t n)
{
    if (!k)
        return;
    /* One writer (the connection's worker): a load and a store, no locked add. */
    atomic_store_explicit(&k->body, atomic_load_explicit(&k->body, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

void mf_httpd__conn_server_turn(struct mf_httpd_conn *k)
{
    if (k)
        atomic_store_explicit(&k->phase, phase_word(0, PHASE_SERVER), memory_order_relaxed);
}

void mf_httpd__conn_request_done(struct mf_httpd_conn *k, const struct timespec *at)
{
    if (k)
        atomic_store_explicit(&k->phase, phase_word(ms_of(at), PHASE_HEADERS),
                              memory_order_relaxed);
}

/* --- the sweeper --- */

/* Under the lock: whether the body of k's current request (phase word w) keeps up with
 * the rate floor over its window; starts the next window when it does. */
static int body_too_slow(const struct mf_conn_guard *g, struct mf_httpd_conn *k, uint64_t w,
                         uint64_t now)
{
    uint64_t bytes = atomic_load_explicit(&k->body, memory_order_relaxed), elapsed;

    if (k->win_phase != w) { /* a new body: its first window starts at the end of headers */
        k->win_phase = w;
        k->win_ms = w >> 2;
        k->win_bytes = 0;
    }
    elapsed = now > k->win_ms ? now - k->win_ms : 0;
    if (elapsed < (uint64_t)g->rules.body_window_s * 1000u)
        return 0;
    if ((bytes - k->win_bytes) * 1000u < (uint64_t)g->rules.body_min_rate * elapsed)
        return 1;
    k->win_ms = now;
    k->win_bytes = bytes;
    return 0;
}

/*
 * A connection's header deadline: header_ms after its clock started, plus up to a quarter
 * more spread by slot and start time. Sockets an attacker opened together would otherwise
 * all be closed in one sweep and come back in one burst of reconnects.
 */
static uint64_t header_deadline(uint64_t start, uint64_t header_ms, unsigned slot)
{
    uint64_t h = (start ^ ((uint64_t)slot << 32)) * 0x9E3779B97F4A7C15ull;

    return start + header_ms + (h >> 40) % (header_ms / 4 + 1);
}

static void sweep(struct mf_conn_guard *g, uint64_t now)
{
    uint64_t header_ms = (uint64_t)g->rules.header_timeout_s * 1000u;

    for (unsigned i = 0; i < g->cap; i++) {
        struct mf_httpd_conn *k = &g->slots[i];
        uint64_t w;

        if (k->fd < 0 || k->closing)
            continue;
        w = atomic_load_explicit(&k->phase, memory_order_acquire);
        if ((w & 3) == PHASE_HEADERS && header_ms && now >= header_deadline(w >> 2, header_ms, i))
            close_by_rule(g, k, MF_CONN_RULE_HEADER);
        else if ((w & 3) == PHASE_BODY && g->rules.body_min_rate && body_too_slow(g, k, w, now))
            close_by_rule(g, k, MF_CONN_RULE_BODY_RATE);
    }
}

/* One line per rule that closed connections since its last line, at most every
 * LOG_EVERY_MS: an attack of thousands of sockets must not flood the log. */
static void log_closings(struct mf_conn_guard *g, uint64_t now)
{
    for (int r = 0; r < MF_CONN_RULES; r++) {
        char addr[INET6_ADDRSTRLEN], line[224];
        uint64_t n = g->pending[r];

        if (!n || (g->logged_ms[r] && now - g->logged_ms[r] < LOG_EVERY_MS) || !g->log_fn)
            continue;
        addr_text(addr, sizeof(addr), g->last_addr[r]);
        if (r == MF_CONN_RULE_HEADER)
            (void)snprintf(line, sizeof(line),
                           "closed %llu connection(s): request header not complete within %u s "
                           "(rule header_timeout; last client %s)",
                           (unsigned long long)n, g->rules.header_timeout_s, addr);
        else if (r == MF_CONN_RULE_BODY_RATE)
            (void)snprintf(line, sizeof(line),
                           "closed %llu connection(s): request body below %u bytes/s over %u s "
                           "(rule body_rate; last client %s)",
                           (unsigned long long)n, g->rules.body_min_rate, g->rules.body_window_s,
                           addr);
        else
            (void)snprintf(line, sizeof(line),
                           "refused %llu connection(s): over %u connections from one address "
                           "(rule per_address; last client %s)",
                           (unsigned long long)n, g->rules.per_addr, addr);
        g->pending[r] = 0;
        g->logged_ms[r] = now;
        g->log_fn(g->log_payload, MF_LOG_WARN, "conns", line);
    }
}

static void *sweeper_main(void *arg)
{
    struct mf_conn_guard *g = arg;

    (void)pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec until;
        uint64_t now = now_ms();

        sweep(g, now);
        log_closings(g, now);
        (void)clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)SWEEP_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!g->stopping && pthread_cond_timedwait(&g->wake, &g->lock, &until) != ETIMEDOUT)
            ;
    }
    (void)pthread_mutex_unlock(&g->lock);
    return NULL;
}

static void guard_free(struct mf_conn_guard *g)
{
    mf_free(NULL, g->slots);
    mf_free(NULL, g->addrs);
    mf_free(NULL, g);
}

int mf_httpd__conns_start(struct mf_httpd_conns *c, struct mf_ctx *ctx,
                          const struct mf_conn_rules *rules, struct mf_metrics *m, mf_log_fn log_fn,
                          void *log_payload)
{
    struct mf_conn_guard *g;
    pthread_condattr_t ca;
    size_t n_addrs = 2;
    int err = MF_OK;

    if (rules->body_min_rate && !rules->body_window_s)
        return mf_fail(ctx, MF_E_INVALID, "a body rate floor of %u bytes/s needs a window",
                       rules->body_min_rate);
    g = mf_calloc(NULL, 1, sizeof(*g));
    if (!g)
        return mf_fail(ctx, MF_E_NOMEM, "out of memory for the connection rules");
    g->rules = *rules;
    g->metrics = m;
    g->log_fn = log_fn;
    g->log_payload = log_payload;
    g->cap = mf_httpd__conns_mhd_limit(c->limit);
    while (n_addrs < 2 * (size_t)g->cap)
        n_addrs *= 2;
    g->addr_mask = n_addrs - 1;
    g->slots = mf_calloc(NULL, g->cap, sizeof(g->slots[0]));
    g->addrs = mf_calloc(NULL, n_addrs, sizeof(g->addrs[0]));
    if (!g->slots || !g->addrs) {
        guard_free(g);
        return mf_fail(ctx, MF_E_NOMEM, "out of memory tracking %u connections", g->cap);
    }
    for (unsigned i = 0; i < g->cap; i++) {
        g->slots[i].fd = -1;
        g->slots[i].next_free = i + 1 < g->cap ? i + 1 : NO_SLOT;
    }
    if (RAND_bytes((unsigned char *)g->seed, (int)sizeof(g->seed)) != 1)
        g->seed[0] = now_ms() * 0x9e3779b97f4a7c15u; /* still unknown to a remote client */
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
        guard_free(g);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the connection rules' mutex");
    }
    /* The sweeper waits on CLOCK_MONOTONIC, the clock of the phase words. */
    if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&g->wake, &ca) != 0) {
        (void)pthread_mutex_destroy(&g->lock);
        guard_free(g);
        return mf_fail(ctx, MF_E_GENERIC, "cannot create the connection sweeper's condition");
    }
    (void)pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, sweeper_main, g) != 0)
        err = mf_fail(ctx, MF_E_GENERIC, "cannot start the connection sweeper thread");
    if (err < 0) {
        (void)pthread_cond_destroy(&g->wake);
        (void)pthread_mutex_destroy(&g->lock);
        guard_free(g);
        return err;
    }
    c->guard = g;
    return MF_OK;
}

void mf_httpd__conns_stop(struct mf_httpd_conns *c)
{
    struct mf_conn_guard *g = c->guard;

    if (!g)
        return;
    mf_worker_thread__stop(&g->stopping, g->thread, &g->lock, &g->wake);
    guard_free(g);
    c->guard = NULL;
}
