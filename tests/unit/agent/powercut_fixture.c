/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The power-cut port (powercut_fixture.h): an in-memory file system, not a journal over the
 * POSIX port. A journal over real files cannot lose what the kernel already holds (the
 * page cache survives the test process, which is the blind spot of kill -9), and it would
 * have to guess what ext4 or a flash FTL keeps; in memory the durable image is explicit.
 *
 * The model, per mf/sys/platform.h (the contract every port promises, no more):
 * - Names live in two namespaces: `live` (what the code sees) and `durable` (what a power
 *   cut leaves). A name is a directory entry; its parent is the directory it lives in.
 * - A directory entry becomes durable only when its directory is synced, and syncing a
 *   directory makes *all* of its current entries durable (additions and removals), as
 *   fsync() of a directory does. The contract syncs a directory in exactly three places:
 *   rename (the directory of `to`), open when it creates a file and mkdir when it creates
 *   a directory (both: the parent). Anything else - remove, a rename's `from` side in
 *   another directory, the entries of a directory nobody synced - is lost at the cut.
 * - File contents are per node (inode): `data` is live, `synced` is what the last sync
 *   made durable. Writes and truncates change `data` only. At the cut a node keeps
 *   `synced` (POWERCUT_KEEP_NONE, the harshest disk) or, with POWERCUT_KEEP_PREFIX, a
 *   random prefix of what was written since: an appended file keeps its synced part plus
 *   0..all of the tail; a file rewritten since its sync (O_TRUNC) keeps either the old
 *   content or any prefix of the new one, zero bytes included (the classic zero-length
 *   file after a crash).
 * - A name whose directory did not survive is gone with it.
 * Only calls that change storage are counted as cut points (reads cannot change what is
 * durable, so a cut before a read equals a cut before the next write), but once the power
 * is down every storage op fails, reads included.
 */
#include "powercut_fixture.h"

#include "mf_test.h"
#include "mf/error.h"

#include <stdio.h>
#include <string.h>

#define PC_MAX_ENTRIES 96
#define PC_MAX_NODES 192
#define PC_MAX_FILES 32
#define PC_NAME_MAX 128

struct pc_node {
    int used, is_dir;
    uint8_t *data, *synced;
    size_t len, cap, synced_len;
};

struct pc_entry {
    char name[PC_NAME_MAX];
    int node; /* -1: free slot */
};

struct pc_ns {
    struct pc_entry e[PC_MAX_ENTRIES];
};

struct pc_handle {
    int node; /* -1: free */
    int writable;
};

struct powercut {
    mf_platform_ops ops;
    enum powercut_keep keep;
    uint64_t rng;
    struct pc_node node[PC_MAX_NODES];
    struct pc_ns live, durable;
    struct pc_handle file[PC_MAX_FILES];
    long calls, cut_at;
    int down;
    uint64_t mono_ms;
};

static uint64_t rng_next(struct powercut *pc)
{
    /* xorshift64*: reproducible per seed, which is all a test needs. */
    pc->rng ^= pc->rng >> 12;
    pc->rng ^= pc->rng << 25;
    pc->rng ^= pc->rng >> 27;
    return pc->rng * 2685821657736338717ull;
}

static int name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n >= PC_NAME_MAX || name[0] == '/' || name[n - 1] == '/' || strstr(name, "//"))
        return 0;
    return strcmp(name, "..") != 0 && strncmp(name, "../", 3) != 0 && !strstr(name, "/../") &&
           (n < 3 || strcmp(name + n - 3, "/..") != 0);
}

/* The directory holding `name` ("" for the top). */
static void parent_of(char *out, const char *name)
{
    const char *slash = strrchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : 0;

    memcpy(out, name, n);
    out[n] = '\0';
}

static int in_dir(const char *name, const char *dir)
{
    char p[PC_NAME_MAX];

    parent_of(p, name);
    return strcmp(p, dir) == 0;
}

static struct pc_entry *ns_find(struct pc_ns *ns, const char *name)
{
    for (int i = 0; i < PC_MAX_ENTRIES; i++) {
        if (ns->e[i].node >= 0 && strcmp(ns->e[i].name, name) == 0)
            return &ns->e[i];
    }
    return NULL;
}

static void ns_set(struct pc_ns *ns, const char *name, int node)
{
    struct pc_entry *e = ns_find(ns, name);

    for (int i = 0; !e && i < PC_MAX_ENTRIES; i++) {
        if (ns->e[i].node < 0)
            e = &ns->e[i];
    }
    if (!e) {
        fail_msg("powercut: out of directory entries (raise PC_MAX_ENTRIES)");
        return;
    }
    (void)snprintf(e->name, sizeof(e->name), "%s", name);
    e->node = node;
}

static void ns_clear(struct pc_ns *ns)
{
    for (int i = 0; i < PC_MAX_ENTRIES; i++)
        ns->e[i].node = -1;
}

static int is_live_dir(struct powercut *pc, const char *dir)
{
    struct pc_entry *e;

    if (!dir[0])
        return 1;
    e = ns_find(&pc->live, dir);
    return e && pc->node[e->node].is_dir;
}

/* The live file `name` in *e: MF_E_NOTFOUND when there is none, `dir_err` when it is a
 * directory. */
static int live_file(struct powercut *pc, const char *name, int dir_err, struct pc_entry **e)
{
    *e = ns_find(&pc->live, name);
    if (!*e)
        return MF_E_NOTFOUND;
    return pc->node[(*e)->node].is_dir ? dir_err : MF_OK;
}

static void node_release(struct pc_node *n)
{
    test_free(n->data);
    test_free(n->synced);
    memset(n, 0, sizeof(*n));
}

/* Frees the nodes no name (live or durable) and no open handle refers to. */
static void gc(struct powercut *pc)
{
    int ref[PC_MAX_NODES] = {0};

    for (int i = 0; i < PC_MAX_ENTRIES; i++) {
        if (pc->live.e[i].node >= 0)
            ref[pc->live.e[i].node] = 1;
        if (pc->durable.e[i].node >= 0)
            ref[pc->durable.e[i].node] = 1;
    }
    for (int i = 0; i < PC_MAX_FILES; i++) {
        if (pc->file[i].node >= 0)
            ref[pc->file[i].node] = 1;
    }
    for (int i = 0; i < PC_MAX_NODES; i++) {
        if (pc->node[i].used && !ref[i])
            node_release(&pc->node[i]);
    }
}

static int node_new(struct powercut *pc, int is_dir)
{
    for (int i = 0; i < PC_MAX_NODES; i++) {
        if (!pc->node[i].used) {
            pc->node[i].used = 1;
            pc->node[i].is_dir = is_dir;
            return i;
        }
    }
    fail_msg("powercut: out of nodes (raise PC_MAX_NODES)");
    return -1;
}

/* fsync() of directory `dir`: its live entries, additions and removals, become durable. */
static void sync_dir(struct powercut *pc, const char *dir)
{
    for (int i = 0; i < PC_MAX_ENTRIES; i++) {
        if (pc->durable.e[i].node >= 0 && in_dir(pc->durable.e[i].name, dir))
            pc->durable.e[i].node = -1;
    }
    for (int i = 0; i < PC_MAX_ENTRIES; i++) {
        if (pc->live.e[i].node >= 0 && in_dir(pc->live.e[i].name, dir))
            ns_set(&pc->durable, pc->live.e[i].name, pc->live.e[i].node);
    }
    gc(pc);
}

/* Every call that changes storage passes here: the cut point. */
static int power_step(struct powercut *pc)
{
    if (pc->down)
        return MF_E_IO;
    if (pc->cut_at >= 0 && pc->calls >= pc->cut_at) {
        pc->down = 1;
        pc->cut_at = -1;
        return MF_E_IO;
    }
    pc->calls++;
    return MF_OK;
}

/* The checks every op on one name starts with. */
static int named_step(struct powercut *pc, const char *name)
{
    return name_ok(name) ? power_step(pc) : MF_E_INVALID;
}

static struct pc_node *file_node(struct powercut *pc, mf_platform_file *f)
{
    size_t i = (size_t)((uintptr_t)f - 1);

    assert_true(i < PC_MAX_FILES && pc->file[i].node >= 0);
    return &pc->node[pc->file[i].node];
}

static int pc_random(void *payload, void *buf, size_t len)
{
    struct powercut *pc = payload;

    for (size_t i = 0; i < len; i++)
        ((uint8_t *)buf)[i] = (uint8_t)rng_next(pc);
    return MF_OK;
}

static uint64_t pc_monotonic_ms(void *payload)
{
    struct powercut *pc = payload;

    /* Each reading is a second later: every time-based checkpoint (download progress,
     * delta apply) fires at its first chance, which gives the most distinct cut points. */
    return pc->mono_ms += 1000;
}

static int64_t pc_wall_clock_s(void *payload)
{
    (void)payload;
    return -1; /* no trusted clock: expiry unchecked, as on a device without RTC */
}

static int pc_open(void *payload, mf_platform_file **file_out, const char *name, int mode)
{
    struct powercut *pc = payload;
    char dir[PC_NAME_MAX];
    struct pc_entry *e;
    int slot = -1, node, err;

    *file_out = NULL;
    if (!name_ok(name))
        return MF_E_INVALID;
    err = (mode & 0xff) == MF_PLATFORM_OPEN_READ ? (pc->down ? MF_E_IO : MF_OK) : power_step(pc);
    if (err < 0)
        return err;
    for (int i = 0; i < PC_MAX_FILES && slot < 0; i++) {
        if (pc->file[i].node < 0)
            slot = i;
    }
    assert_true(slot >= 0); /* a handle leak in the code under test */
    e = ns_find(&pc->live, name);
    if (e && pc->node[e->node].is_dir)
        return MF_E_IO;
    switch (mode & 0xff) {
    case MF_PLATFORM_OPEN_READ:
        if (!e)
            return MF_E_NOTFOUND;
        node = e->node;
        break;
    case MF_PLATFORM_OPEN_WRITE:
    case MF_PLATFORM_OPEN_RESUME:
        parent_of(dir, name);
        if (!is_live_dir(pc, dir))
            return MF_E_NOTFOUND;
        if (e) {
            node = e->node;
            if ((mode & 0xff) == MF_PLATFORM_OPEN_WRITE)
                pc->node[node].len = 0;
        } else {
            node = node_new(pc, 0);
            ns_set(&pc->live, name, node);
            sync_dir(pc, dir); /* the contract: a file open creates is durable (empty) */
        }
        break;
    default:
        return MF_E_INVALID;
    }
    pc->file[slot].node = node;
    pc->file[slot].writable = (mode & 0xff) != MF_PLATFORM_OPEN_READ;
    *file_out = (mf_platform_file *)(uintptr_t)(slot + 1);
    return MF_OK;
}

static int pc_read_at(void *payload, size_t *nread_out, mf_platform_file *file, uint64_t offset,
                      void *buf, size_t len)
{
    struct powercut *pc = payload;
    struct pc_node *n;

    *nread_out = 0;
    if (pc->down)
        return MF_E_IO;
    n = file_node(pc, file);
    if (offset >= n->len)
        return MF_OK;
    if (len > n->len - offset)
        len = (size_t)(n->len - offset);
    memcpy(buf, n->data + offset, len);
    *nread_out = len;
    return MF_OK;
}

static void reserve(uint8_t **p, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 256;

    if (need <= *cap)
        return;
    while (c < need)
        c *= 2;
    *p = test_realloc(*p, c);
    assert_non_null(*p);
    *cap = c;
}

static int pc_write(void *payload, mf_platform_file *file, const void *buf, size_t len)
{
    struct powercut *pc = payload;
    struct pc_node *n = file_node(pc, file);
    int err = power_step(pc);

    if (err < 0)
        return err;
    assert_true(pc->file[(uintptr_t)file - 1].writable);
    reserve(&n->data, &n->cap, n->len + len);
    memcpy(n->data + n->len, buf, len);
    n->len += len;
    return MF_OK;
}

static int pc_sync(void *payload, mf_platform_file *file)
{
    struct powercut *pc = payload;
    struct pc_node *n = file_node(pc, file);
    int err = power_step(pc);

    if (err < 0)
        return err;
    if (n->len > 0) {
        n->synced = test_realloc(n->synced, n->len);
        assert_non_null(n->synced);
        memcpy(n->synced, n->data, n->len);
    }
    n->synced_len = n->len;
    return MF_OK;
}

static void pc_close(void *payload, mf_platform_file *file)
{
    struct powercut *pc = payload;
    size_t i = (size_t)((uintptr_t)file - 1);

    if (!file || i >= PC_MAX_FILES)
        return;
    pc->file[i].node = -1; /* after a cut the handle may already be gone: harmless */
    gc(pc);
}

static int pc_size(void *payload, uint64_t *size_out, const char *name)
{
    struct powercut *pc = payload;
    struct pc_entry *e;
    int err;

    *size_out = 0;
    if (!name_ok(name))
        return MF_E_INVALID;
    if (pc->down)
        return MF_E_IO;
    err = live_file(pc, name, MF_E_INVALID, &e);
    if (err < 0)
        return err;
    *size_out = pc->node[e->node].len;
    return MF_OK;
}

static int pc_rename(void *payload, const char *from, const char *to)
{
    struct powercut *pc = payload;
    char dir[PC_NAME_MAX];
    struct pc_entry *e;
    int node, err;

    if (!name_ok(from) || !name_ok(to))
        return MF_E_INVALID;
    err = power_step(pc);
    if (err < 0)
        return err;
    e = ns_find(&pc->live, from);
    parent_of(dir, to);
    if (!e || !is_live_dir(pc, dir))
        return MF_E_NOTFOUND;
    node = e->node;
    e->node = -1;
    ns_set(&pc->live, to, node);
    sync_dir(pc, dir); /* the contract: rename is durable (POSIX: fsync of to's directory) */
    return MF_OK;
}

static int pc_remove(void *payload, const char *name)
{
    struct powercut *pc = payload;
    struct pc_entry *e;
    int err = named_step(pc, name);

    if (err < 0)
        return err;
    err = live_file(pc, name, MF_E_IO, &e);
    if (err < 0)
        return err;
    e->node = -1;
    gc(pc);
    return MF_OK;
}

static int pc_mkdir(void *payload, const char *name)
{
    struct powercut *pc = payload;
    char dir[PC_NAME_MAX];
    int err = named_step(pc, name);

    if (err < 0)
        return err;
    if (ns_find(&pc->live, name))
        return MF_OK;
    parent_of(dir, name);
    if (!is_live_dir(pc, dir))
        return MF_E_NOTFOUND;
    ns_set(&pc->live, name, node_new(pc, 1));
    sync_dir(pc, dir); /* the contract: a directory mkdir creates is durable */
    return MF_OK;
}

static int pc_truncate(void *payload, mf_platform_file *file, uint64_t size)
{
    struct powercut *pc = payload;
    struct pc_node *n = file_node(pc, file);
    int err = power_step(pc);

    if (err < 0)
        return err;
    if (size > n->len) {
        reserve(&n->data, &n->cap, (size_t)size);
        memset(n->data + n->len, 0, (size_t)size - n->len);
    }
    n->len = (size_t)size;
    return MF_OK;
}

struct powercut *powercut_new(enum powercut_keep keep, uint64_t seed)
{
    static const mf_platform_ops ops = {
        .version = MF_PLATFORM_OPS_VERSION,
        .random = pc_random,
        .monotonic_ms = pc_monotonic_ms,
        .wall_clock_s = pc_wall_clock_s,
        .open = pc_open,
        .read_at = pc_read_at,
        .write = pc_write,
        .sync = pc_sync,
        .close = pc_close,
        .size = pc_size,
        .rename = pc_rename,
        .remove = pc_remove,
        .mkdir = pc_mkdir,
        .truncate = pc_truncate,
    };
    struct powercut *pc = test_calloc(1, sizeof(*pc));

    assert_non_null(pc);
    pc->ops = ops;
    pc->ops.payload = pc;
    pc->keep = keep;
    pc->rng = seed * 0x9e3779b97f4a7c15ull + 1;
    pc->cut_at = -1;
    ns_clear(&pc->live);
    ns_clear(&pc->durable);
    for (int i = 0; i < PC_MAX_FILES; i++)
        pc->file[i].node = -1;
    return pc;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *c = test_malloc(n ? n : 1);

    if (n)
        memcpy(c, p, n);
    return c;
}

struct powercut *powercut_clone(const struct powercut *pc, enum powercut_keep keep, uint64_t seed)
{
    struct powercut *c = powercut_new(keep, seed);
    uint64_t rng = c->rng;

    *c = *pc;
    c->ops.payload = c;
    c->keep = keep;
    c->rng = rng;
    for (int i = 0; i < PC_MAX_FILES; i++)
        assert_true(pc->file[i].node < 0);
    for (int i = 0; i < PC_MAX_NODES; i++) {
        struct pc_node *n = &c->node[i];

        if (!n->used)
            continue;
        n->data = n->len ? dup_bytes(n->data, n->len) : NULL;
        n->cap = n->len;
        n->synced = n->synced ? dup_bytes(n->synced, n->synced_len) : NULL;
    }
    return c;
}

void powercut_free(struct powercut *pc)
{
    if (!pc)
        return;
    for (int i = 0; i < PC_MAX_NODES; i++) {
        if (pc->node[i].used)
            node_release(&pc->node[i]);
    }
    test_free(pc);
}

const mf_platform_ops *powercut_ops(struct powercut *pc)
{
    return &pc->ops;
}

void powercut_arm(struct powercut *pc, long n)
{
    pc->cut_at = n < 0 ? -1 : pc->calls + n;
}

long powercut_calls(const struct powercut *pc)
{
    return pc->calls;
}

int powercut_is_down(const struct powercut *pc)
{
    return pc->down;
}

/* What a node's bytes become at the cut (see the model above). */
static void settle_node(struct powercut *pc, struct pc_node *n)
{
    if (pc->keep == POWERCUT_KEEP_PREFIX) {
        int appended = n->len >= n->synced_len &&
                       (n->synced_len == 0 || memcmp(n->data, n->synced, n->synced_len) == 0);

        if (appended) {
            n->len = n->synced_len + (size_t)(rng_next(pc) % (n->len - n->synced_len + 1));
            return;
        }
        if (rng_next(pc) & 1) {
            n->len = (size_t)(rng_next(pc) % (n->len + 1)); /* the new content, cut short */
            return;
        }
    }
    reserve(&n->data, &n->cap, n->synced_len);
    if (n->synced_len)
        memcpy(n->data, n->synced, n->synced_len);
    n->len = n->synced_len;
}

void powercut_reboot(struct powercut *pc)
{
    int changed = 1;

    for (int i = 0; i < PC_MAX_FILES; i++)
        pc->file[i].node = -1;
    /* Names whose directory did not survive go with it (repeat for nested ones). */
    while (changed) {
        changed = 0;
        for (int i = 0; i < PC_MAX_ENTRIES; i++) {
            struct pc_entry *e = &pc->durable.e[i];
            char dir[PC_NAME_MAX];
            struct pc_entry *d;

            if (e->node < 0)
                continue;
            parent_of(dir, e->name);
            d = dir[0] ? ns_find(&pc->durable, dir) : NULL;
            if (dir[0] && (!d || !pc->node[d->node].is_dir)) {
                e->node = -1;
                changed = 1;
            }
        }
    }
    pc->live = pc->durable;
    gc(pc);
    for (int i = 0; i < PC_MAX_NODES; i++) {
        struct pc_node *n = &pc->node[i];

        if (!n->used || n->is_dir)
            continue;
        settle_node(pc, n);
        /* What the disk holds now is, by definition, durable. */
        n->synced = test_realloc(n->synced, n->len ? n->len : 1);
        assert_non_null(n->synced);
        if (n->len)
            memcpy(n->synced, n->data, n->len);
        n->synced_len = n->len;
    }
    pc->down = 0;
    pc->cut_at = -1;
}

uint8_t *powercut_read(struct powercut *pc, const char *name, size_t *len_out)
{
    struct pc_entry *e = ns_find(&pc->live, name);
    uint8_t *copy;

    *len_out = 0;
    if (!e || pc->node[e->node].is_dir)
        return NULL;
    copy = test_malloc(pc->node[e->node].len + 1);
    if (pc->node[e->node].len)
        memcpy(copy, pc->node[e->node].data, pc->node[e->node].len);
    *len_out = pc->node[e->node].len;
    return copy;
}
