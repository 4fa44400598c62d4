/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the POSIX platform port (device/port/platform_posix.c). */
#include "mf_test.h"
#include "kit_fs.h"
#include "mf/sys/platform_posix.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct port_fixture {
    char dir[64];
    mf_platform_posix posix;
    mf_platform_ops ops;
};

static int setup(void **state)
{
    struct port_fixture *fx = test_calloc(1, sizeof(*fx));

    mf_kit_fs_mkdtemp(fx->dir, sizeof(fx->dir), "mf-port");
    assert_int_equal(mf_platform_posix_init(&fx->ops, &fx->posix, fx->dir), MF_OK);
    *state = fx;
    return 0;
}

/* Removes what the tests may have left (a flat set of names) and the directory. */
static int teardown(void **state)
{
    static const char *const names[] = {"a", "a.tmp", "b", "sub/c", "sub/c.tmp", "log", "secret"};
    struct port_fixture *fx = *state;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        (void)fx->ops.remove(fx->ops.payload, names[i]);
    (void)unlinkat(fx->posix.dirfd, "sub", AT_REMOVEDIR);
    mf_platform_posix_close(&fx->posix);
    mf_platform_posix_close(&fx->posix); /* second close is a no-op */
    assert_int_equal(rmdir(fx->dir), 0);
    test_free(fx);
    return 0;
}

static void write_file(const mf_platform_ops *ops, const char *name, const char *text, int mode)
{
    mf_platform_file *f = NULL;

    assert_int_equal(ops->open(ops->payload, &f, name, mode), MF_OK);
    assert_int_equal(ops->write(ops->payload, f, text, strlen(text)), MF_OK);
    assert_int_equal(ops->sync(ops->payload, f), MF_OK);
    ops->close(ops->payload, f);
}

static void read_file(const mf_platform_ops *ops, const char *name, char *out, size_t cap)
{
    mf_platform_file *f = NULL;
    size_t got = 0;

    assert_int_equal(ops->open(ops->payload, &f, name, MF_PLATFORM_OPEN_READ), MF_OK);
    assert_int_equal(ops->read_at(ops->payload, &got, f, 0, out, cap - 1), MF_OK);
    out[got] = '\0';
    ops->close(ops->payload, f);
}

static void test_port__durable_rename_replaces_target(void **state)
{
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    char buf[32];
    uint64_t size = 0;

    write_file(ops, "a", "old", MF_PLATFORM_OPEN_WRITE);
    write_file(ops, "a.tmp", "new content", MF_PLATFORM_OPEN_WRITE);
    assert_int_equal(ops->rename(ops->payload, "a.tmp", "a"), MF_OK);
    read_file(ops, "a", buf, sizeof(buf));
    assert_string_equal(buf, "new content");
    assert_int_equal(ops->size(ops->payload, &size, "a.tmp"), MF_E_NOTFOUND);
    /* Into a subdirectory: the parent of the target is what gets synced. */
    assert_int_equal(ops->mkdir(ops->payload, "sub"), MF_OK);
    assert_int_equal(ops->mkdir(ops->payload, "sub"), MF_OK); /* exists: still fine */
    write_file(ops, "sub/c.tmp", "deep", MF_PLATFORM_OPEN_WRITE);
    assert_int_equal(ops->rename(ops->payload, "sub/c.tmp", "sub/c"), MF_OK);
    read_file(ops, "sub/c", buf, sizeof(buf));
    assert_string_equal(buf, "deep");
    assert_int_equal(ops->rename(ops->payload, "missing", "b"), MF_E_NOTFOUND);
}

static void test_port__read_at_and_size(void **state)
{
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    mf_platform_file *f = NULL;
    char buf[8];
    size_t got = 99;
    uint64_t size = 0;

    write_file(ops, "a", "0123456789", MF_PLATFORM_OPEN_WRITE);
    assert_int_equal(ops->size(ops->payload, &size, "a"), MF_OK);
    assert_int_equal(size, 10);
    assert_int_equal(ops->open(ops->payload, &f, "a", MF_PLATFORM_OPEN_READ), MF_OK);
    assert_int_equal(ops->read_at(ops->payload, &got, f, 7, buf, sizeof(buf)), MF_OK);
    assert_int_equal(got, 3);
    assert_memory_equal(buf, "789", 3);
    assert_int_equal(ops->read_at(ops->payload, &got, f, 10, buf, sizeof(buf)), MF_OK);
    assert_int_equal(got, 0); /* end of file */
    assert_int_equal(ops->read_at(ops->payload, &got, f, 2, buf, 4), MF_OK);
    assert_int_equal(got, 4);
    assert_memory_equal(buf, "2345", 4);
    ops->close(ops->payload, f);
}

static void test_port__resume_appends_and_write_truncates(void **state)
{
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    char buf[32];

    write_file(ops, "log", "one,", MF_PLATFORM_OPEN_RESUME);
    write_file(ops, "log", "two", MF_PLATFORM_OPEN_RESUME);
    read_file(ops, "log", buf, sizeof(buf));
    assert_string_equal(buf, "one,two");
    write_file(ops, "log", "x", MF_PLATFORM_OPEN_WRITE);
    read_file(ops, "log", buf, sizeof(buf));
    assert_string_equal(buf, "x");
}

static void test_port__secret_files_are_private(void **state)
{
    struct port_fixture *fx = *state;
    struct stat st;

    write_file(&fx->ops, "secret", "mfd_x", MF_PLATFORM_OPEN_WRITE | MF_PLATFORM_OPEN_SECRET);
    assert_int_equal(fstatat(fx->posix.dirfd, "secret", &st, 0), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_port__errors(void **state)
{
    static const char *const bad[] = {"", "/etc/passwd", "..", "../x", "a/../b", "a//b", "a/"};
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    mf_platform_file *f = (mf_platform_file *)1;
    uint64_t size = 7;

    assert_int_equal(ops->open(ops->payload, &f, "nope", MF_PLATFORM_OPEN_READ), MF_E_NOTFOUND);
    assert_null(f);
    assert_int_equal(ops->size(ops->payload, &size, "nope"), MF_E_NOTFOUND);
    assert_int_equal(ops->remove(ops->payload, "nope"), MF_E_NOTFOUND);
    assert_int_equal(ops->open(ops->payload, &f, "a", 77), MF_E_INVALID);
    assert_int_equal(ops->mkdir(ops->payload, "sub"), MF_OK);
    assert_int_equal(ops->size(ops->payload, &size, "sub"), MF_E_INVALID); /* not a file */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ops->open(ops->payload, &f, bad[i], MF_PLATFORM_OPEN_WRITE), MF_E_INVALID);
        assert_int_equal(ops->rename(ops->payload, "a", bad[i]), MF_E_INVALID);
        assert_int_equal(ops->remove(ops->payload, bad[i]), MF_E_INVALID);
        assert_int_equal(ops->mkdir(ops->payload, bad[i]), MF_E_INVALID);
    }
}

/* fsync() seen through -Wl,--wrap=fsync: the inodes of the directories the port synced. */
int __real_fsync(int fd);
int __wrap_fsync(int fd);
static ino_t dir_synced[8];
static int n_dir_synced;

int __wrap_fsync(int fd)
{
    struct stat st;

    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && n_dir_synced < 8)
        dir_synced[n_dir_synced++] = st.st_ino;
    return __real_fsync(fd);
}

/* Asserts that exactly the directory `dir` (relative to the state dir) was synced, or none. */
static void assert_dir_synced(const struct port_fixture *fx, const char *dir)
{
    struct stat st;

    if (!dir) {
        assert_int_equal(n_dir_synced, 0);
        return;
    }
    assert_int_equal(fstatat(fx->posix.dirfd, dir, &st, 0), 0);
    assert_int_equal(n_dir_synced, 1);
    assert_true(dir_synced[0] == st.st_ino);
    n_dir_synced = 0;
}

/* A power cut keeps a name only once its directory is synced: a file open creates and a
 * directory mkdir creates must be (platform.h), reopening or re-making must cost nothing. */
static void test_port__created_names_are_durable(void **state)
{
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    mf_platform_file *f = NULL;

    n_dir_synced = 0;
    assert_int_equal(ops->open(ops->payload, &f, "a", MF_PLATFORM_OPEN_WRITE), MF_OK);
    ops->close(ops->payload, f);
    assert_dir_synced(fx, ".");
    assert_int_equal(ops->open(ops->payload, &f, "a", MF_PLATFORM_OPEN_WRITE), MF_OK);
    ops->close(ops->payload, f);
    assert_int_equal(ops->open(ops->payload, &f, "a", MF_PLATFORM_OPEN_RESUME), MF_OK);
    ops->close(ops->payload, f);
    assert_dir_synced(fx, NULL);
    assert_int_equal(ops->mkdir(ops->payload, "sub"), MF_OK);
    assert_dir_synced(fx, ".");
    assert_int_equal(ops->mkdir(ops->payload, "sub"), MF_OK);
    assert_dir_synced(fx, NULL);
    assert_int_equal(ops->open(ops->payload, &f, "sub/c", MF_PLATFORM_OPEN_RESUME), MF_OK);
    ops->close(ops->payload, f);
    assert_dir_synced(fx, "sub");
}

/* The state dir itself is a name in its parent: one the port creates is synced there. */
static void test_port__init_syncs_a_state_dir_it_creates(void **state)
{
    char base[] = "/tmp/mf-port-base-XXXXXX", dir[64];
    mf_platform_posix posix;
    mf_platform_ops ops;
    struct stat st;

    (void)state;
    assert_non_null(mkdtemp(base));
    (void)snprintf(dir, sizeof(dir), "%s/state", base);
    n_dir_synced = 0;
    assert_int_equal(mf_platform_posix_init(&ops, &posix, dir), MF_OK);
    mf_platform_posix_close(&posix);
    assert_int_equal(stat(base, &st), 0);
    assert_int_equal(n_dir_synced, 1);
    assert_true(dir_synced[0] == st.st_ino);
    n_dir_synced = 0;
    assert_int_equal(mf_platform_posix_init(&ops, &posix, dir), MF_OK); /* exists: no sync */
    mf_platform_posix_close(&posix);
    assert_int_equal(n_dir_synced, 0);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(rmdir(base), 0);
}

static void test_port__init_fails_on_a_file(void **state)
{
    mf_platform_posix posix;
    mf_platform_ops ops;
    char path[] = "/tmp/mf-port-file-XXXXXX";
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(mf_platform_posix_init(&ops, &posix, path), MF_E_IO);
    mf_platform_posix_close(&posix);
    (void)close(fd);
    (void)unlink(path);
}

static void test_port__random_and_clocks(void **state)
{
    struct port_fixture *fx = *state;
    const mf_platform_ops *ops = &fx->ops;
    uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};
    uint64_t t0, t1;

    assert_int_equal(ops->random(ops->payload, a, sizeof(a)), MF_OK);
    assert_int_equal(ops->random(ops->payload, b, sizeof(b)), MF_OK);
    assert_memory_not_equal(a, zero, sizeof(a));
    assert_memory_not_equal(a, b, sizeof(a));
    t0 = ops->monotonic_ms(ops->payload);
    {
        struct timespec ts = {0, 20 * 1000 * 1000};

        (void)nanosleep(&ts, NULL);
    }
    t1 = ops->monotonic_ms(ops->payload);
    assert_true(t1 >= t0 + 15);
    assert_true(ops->wall_clock_s(ops->payload) > 1600000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_port__durable_rename_replaces_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port__read_at_and_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port__resume_appends_and_write_truncates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_port__secret_files_are_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port__errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port__created_names_are_durable, setup, teardown),
        cmocka_unit_test(test_port__init_syncs_a_state_dir_it_creates),
        cmocka_unit_test(test_port__init_fails_on_a_file),
        cmocka_unit_test_setup_teardown(test_port__random_and_clocks, setup, teardown),
    };
    return cmocka_run_group_tests_name("port", tests, NULL, NULL);
}
