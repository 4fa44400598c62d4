/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX reference port (mf/sys/platform_posix.h). Every name is resolved relative to the
 * state directory descriptor, so the agent cannot reach outside it even with a hostile
 * model name. A directory entry survives a power cut only once its directory is synced,
 * so the port fsyncs the directory after each entry the contract promises is durable: the
 * target of a rename, a file open created, a directory mkdir created. Removals are not
 * synced (the contract does not promise them; the next sync of that directory carries them).
 */
#include "mf/sys/platform_posix.h"
#include "mf/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * A file handle is the descriptor plus one, cast to a pointer: the port needs no heap and
 * no table, and NULL (0) never names an open file.
 */
static mf_platform_file *fd_to_file(int fd)
{
    return (mf_platform_file *)(uintptr_t)(fd + 1);
}

static int file_to_fd(mf_platform_file *f)
{
    return (int)((uintptr_t)f - 1);
}

static int posix_dirfd(void *payload)
{
    return ((mf_platform_posix *)payload)->dirfd;
}

static int errno_to_mf(int e)
{
    return e == ENOENT ? MF_E_NOTFOUND : MF_E_IO;
}

/* Refuses absolute names, empty components and "..", so names stay inside the state dir. */
static int name_ok(const char *name)
{
    const char *p = name;

    if (!name[0] || name[0] == '/')
        return 0;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += n;
        if (*p == '/')
            p++;
    }
    return p[-1] != '/';
}

static int posix_random(void *payload, void *buf, size_t len)
{
    uint8_t *out = buf;
    int fd;

    (void)payload;
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return MF_E_IO;
    while (len > 0) {
        ssize_t n = read(fd, out, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            (void)close(fd);
            return MF_E_IO;
        }
        out += n;
        len -= (size_t)n;
    }
    (void)close(fd);
    return MF_OK;
}

static uint64_t posix_monotonic_ms(void *payload)
{
    struct timespec ts;

    (void)payload;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t posix_wall_clock_s(void *payload)
{
    (void)payload;
    return (int64_t)time(NULL);
}

static int posix_read_at(void *payload, size_t *nread_out, mf_platform_file *file, uint64_t offset,
                         void *buf, size_t len)
{
    ssize_t n;

    (void)payload;
    *nread_out = 0;
    if (offset > (uint64_t)INT64_MAX)
        return MF_E_INVALID;
    do {
        n = pread(file_to_fd(file), buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return MF_E_IO;
    *nread_out = (size_t)n;
    return MF_OK;
}

static int posix_write(void *payload, mf_platform_file *file, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    (void)payload;
    while (len > 0) {
        ssize_t n = write(file_to_fd(file), p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return MF_E_IO;
        p += n;
        len -= (size_t)n;
    }
    return MF_OK;
}

static int posix_sync(void *payload, mf_platform_file *file)
{
    (void)payload;
    return fsync(file_to_fd(file)) == 0 ? MF_OK : MF_E_IO;
}

static void posix_close(void *payload, mf_platform_file *file)
{
    (void)payload;
    if (file)
        (void)close(file_to_fd(file));
}

static int posix_size(void *payload, uint64_t *size_out, const char *name)
{
    struct stat st;

    *size_out = 0;
    if (!name_ok(name))
        return MF_E_INVALID;
    if (fstatat(posix_dirfd(payload), name, &st, 0) != 0)
        return errno_to_mf(errno);
    if (!S_ISREG(st.st_mode))
        return MF_E_INVALID;
    *size_out = (uint64_t)st.st_size;
    return MF_OK;
}

/* fsync() of the directory `dir`, relative to `dirfd`. */
static int sync_dir_at(int dirfd, const char *dir)
{
    int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

    if (fd < 0)
        return MF_E_IO;
    err = fsync(fd) == 0 ? MF_OK : MF_E_IO;
    (void)close(fd);
    return err;
}

/* fsync() of the directory that holds `name` ("a/b/c" -> "a/b", "c" -> the state dir). */
static int sync_parent(int dirfd, const char *name)
{
    char parent[256];
    const char *slash = strrchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : 0;

    if (n >= sizeof(parent))
        return MF_E_INVALID;
    if (n == 0)
        return fsync(dirfd) == 0 ? MF_OK : MF_E_IO;
    memcpy(parent, name, n);
    parent[n] = '\0';
    return sync_dir_at(dirfd, parent);
}

/*
 * O_EXCL first, so the port knows whether it created `name`: only then is the directory
 * synced (mf/sys/platform.h: a created file's name is durable when open returns), and
 * reopening an existing file costs no directory fsync.
 */
static int open_create(int dirfd, const char *name, int flags, mode_t perm, int *created)
{
    int fd;

    *created = 0;
    for (;;) {
        fd = openat(dirfd, name, flags | O_EXCL, perm);
        if (fd >= 0) {
            *created = 1;
            return fd;
        }
        if (errno == EINTR)
            continue;
        if (errno != EEXIST)
            return -1;
        fd = openat(dirfd, name, flags & ~O_CREAT, perm);
        if (fd >= 0 || (errno != EINTR && errno != ENOENT))
            return fd; /* ENOENT: removed in between, create it after all */
    }
}

static int posix_open(void *payload, mf_platform_file **file_out, const char *name, int mode)
{
    mode_t perm = (mode & MF_PLATFORM_OPEN_SECRET) ? 0600 : 0644;
    int flags = O_CLOEXEC;
    int fd, created = 0, err;

    *file_out = NULL;
    if (!name_ok(name))
        return MF_E_INVALID;
    switch (mode & 0xff) {
    case MF_PLATFORM_OPEN_READ:
        flags |= O_RDONLY;
        break;
    case MF_PLATFORM_OPEN_WRITE:
        flags |= O_WRONLY | O_CREAT | O_TRUNC;
        break;
    case MF_PLATFORM_OPEN_RESUME:
        flags |= O_WRONLY | O_CREAT | O_APPEND;
        break;
    default:
        return MF_E_INVALID;
    }
    if (flags & O_CREAT) {
        fd = open_create(posix_dirfd(payload), name, flags, perm, &created);
    } else {
        do {
            fd = openat(posix_dirfd(payload), name, flags, perm);
        } while (fd < 0 && errno == EINTR);
    }
    if (fd < 0)
        return errno_to_mf(errno);
    if (created) {
        err = sync_parent(posix_dirfd(payload), name);
        if (err < 0) {
            (void)close(fd);
            return err;
        }
    }
    *file_out = fd_to_file(fd);
    return MF_OK;
}

static int posix_rename(void *payload, const char *from, const char *to)
{
    int dirfd = posix_dirfd(payload);

    if (!name_ok(from) || !name_ok(to))
        return MF_E_INVALID;
    if (renameat(dirfd, from, dirfd, to) != 0)
        return errno_to_mf(errno);
    return sync_parent(dirfd, to);
}

static int posix_remove(void *payload, const char *name)
{
    if (!name_ok(name))
        return MF_E_INVALID;
    if (unlinkat(posix_dirfd(payload), name, 0) != 0)
        return errno_to_mf(errno);
    return MF_OK;
}

static int posix_mkdir(void *payload, const char *name)
{
    if (!name_ok(name))
        return MF_E_INVALID;
    if (mkdirat(posix_dirfd(payload), name, 0700) != 0)
        return errno == EEXIST ? MF_OK : errno_to_mf(errno);
    /* The new entry is durable before anything is created inside it (mf/sys/platform.h). */
    return sync_parent(posix_dirfd(payload), name);
}

static int posix_truncate(void *payload, mf_platform_file *file, uint64_t size)
{
    int rc;

    (void)payload;
    if (size > (uint64_t)INT64_MAX)
        return MF_E_INVALID;
    do {
        rc = ftruncate(file_to_fd(file), (off_t)size);
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? MF_OK : MF_E_IO;
}

int mf_platform_posix_init(mf_platform_ops *ops_out, mf_platform_posix *posix,
                           const char *state_dir)
{
    static const mf_platform_ops posix_ops = {
        .version = MF_PLATFORM_OPS_VERSION,
        .random = posix_random,
        .monotonic_ms = posix_monotonic_ms,
        .wall_clock_s = posix_wall_clock_s,
        .open = posix_open,
        .read_at = posix_read_at,
        .write = posix_write,
        .sync = posix_sync,
        .close = posix_close,
        .size = posix_size,
        .rename = posix_rename,
        .remove = posix_remove,
        .mkdir = posix_mkdir,
        .truncate = posix_truncate,
    };
    int created;

    posix->dirfd = -1;
    created = mkdir(state_dir, 0700) == 0;
    if (!created && errno != EEXIST)
        return MF_E_IO;
    posix->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (posix->dirfd < 0)
        return errno_to_mf(errno);
    /* A state dir made here must outlive a power cut like every name inside it. */
    if (created && sync_dir_at(posix->dirfd, "..") < 0) {
        mf_platform_posix_close(posix);
        return MF_E_IO;
    }
    *ops_out = posix_ops;
    ops_out->payload = posix;
    return MF_OK;
}

void mf_platform_posix_close(mf_platform_posix *posix)
{
    if (posix->dirfd >= 0)
        (void)close(posix->dirfd);
    posix->dirfd = -1;
}

/* The start of a small sysfs/procfs file, NUL-terminated: its length; MF_E_NOTFOUND when it is
 * absent or not readable by this process, MF_E_IO when it reads nothing. */
static ssize_t read_small(const char *path, char *text, size_t cap)
{
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == EPERM
                   ? MF_E_NOTFOUND
                   : MF_E_IO;
    do {
        n = read(fd, text, cap - 1);
    } while (n < 0 && errno == EINTR);
    (void)close(fd);
    if (n <= 0)
        return MF_E_IO;
    text[n] = '\0';
    return n;
}

int mf_platform_posix_energy(void *payload, uint64_t *out)
{
    const char *path = payload ? (const char *)payload : MF_PLATFORM_POSIX_ENERGY_PATH;
    char text[32];
    ssize_t n;
    uint64_t v = 0;
    int digits = 0;

    *out = 0;
    n = read_small(path, text, sizeof(text));
    if (n < 0)
        return (int)n;
    for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
        if (v > (UINT64_MAX - 9u) / 10u)
            return MF_E_IO;
        v = v * 10u + (uint64_t)(text[i] - '0');
    }
    if (digits == 0)
        return MF_E_IO;
    *out = v;
    return MF_OK;
}

/* The integer at the start of `<root><rel>`, or -1 when absent or not a number. */
static long read_level(const char *root, const char *rel)
{
    char path[MF_PLATFORM_POSIX_ROOT_MAX + 48], text[24], *end = NULL;
    long v;

    if ((size_t)snprintf(path, sizeof(path), "%s%s", root, rel) >= sizeof(path) ||
        read_small(path, text, sizeof(text)) < 0)
        return -1;
    errno = 0;
    v = strtol(text, &end, 10);
    return end == text || errno || v < 0 ? -1 : v;
}

int mf_platform_posix_squeeze(mf_degrade_signals *out, const char *root)
{
    char path[MF_PLATFORM_POSIX_ROOT_MAX + 48], text[128]; /* the first line is enough */
    const char *r = root ? root : "";
    long temp, cap;

    if (!out || strlen(r) > MF_PLATFORM_POSIX_ROOT_MAX)
        return MF_E_INVALID;
    out->memory_pressure = out->thermal = out->battery_pct = -1;
    /* "some avg10=12.34 avg60=... total=...": share of the last 10 s some task stalled. */
    if ((size_t)snprintf(path, sizeof(path), "%s/proc/pressure/memory", r) < sizeof(path) &&
        read_small(path, text, sizeof(text)) > 0) {
        const char *at = strncmp(text, "some ", 5) == 0 ? strstr(text, "avg10=") : NULL;
        char *end = NULL;
        double share = at ? strtod(at + 6, &end) : 0.0;

        if (at && end != at + 6)
            out->memory_pressure = share >= MF_PLATFORM_POSIX_PSI_PRESSURE;
    }
    temp = read_level(r, "/sys/class/thermal/thermal_zone0/temp"); /* millidegrees */
    if (temp >= 0)
        out->thermal = temp < 70000 ? 0 : temp < 80000 ? 1 : temp < 90000 ? 2 : 3;
    cap = read_level(r, "/sys/class/power_supply/BAT0/capacity");
    if (cap >= 0 && cap <= 100)
        out->battery_pct = (int)cap;
    return MF_OK;
}
