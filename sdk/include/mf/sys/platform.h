/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/sys/platform.h
 * @brief Platform port: randomness, clocks and storage for the device agent.
 *
 * libmf touches the outside world (other than the network) only through this table, so a
 * port can map storage to flash partitions and randomness to a hardware RNG. Storage names
 * are relative to the port's state directory, use '/' as separator, never start with '/'
 * and never contain a ".." component (ports SHALL refuse such names with MF_E_INVALID).
 *
 * Every storage op returns MF_OK or a negative mf_err (MF_E_IO for device failures,
 * MF_E_NOTFOUND when a name does not exist). Ops cannot set an error message: the caller
 * names the operation and the file in its own message.
 *
 * Durability (what a power cut leaves; libmf relies on exactly this, no more):
 * - file bytes: what the last successful sync covered; anything written or truncated
 *   since may be lost, wholly or in part;
 * - names: a name rename, open (when it created the file) or mkdir (when it created the
 *   directory) returned MF_OK for survives; a removed name may come back until a later
 *   rename in the same directory; nothing else about names is promised.
 * A port that cannot make a step durable fails it with MF_E_IO.
 */
#ifndef MF_SYS_PLATFORM_H
#define MF_SYS_PLATFORM_H

#include "mf/common.h"

MF_BEGIN_DECLS

/** Version of struct mf_platform_ops described by this header; fields are only appended. */
#define MF_PLATFORM_OPS_VERSION 2

/** An open storage object; its layout belongs to the port. */
typedef struct mf_platform_file mf_platform_file;

/** Open modes for mf_platform_ops.open. */
typedef enum mf_platform_open_mode {
    MF_PLATFORM_OPEN_READ = 1,  /**< existing object, read_at only */
    MF_PLATFORM_OPEN_WRITE = 2, /**< create or truncate, sequential write */
    MF_PLATFORM_OPEN_RESUME = 3 /**< create or keep, sequential write appends at the end */
} mf_platform_open_mode;

/** Flag OR-ed into the open mode: the object holds a secret (POSIX: mode 0600). */
#define MF_PLATFORM_OPEN_SECRET 0x100

typedef struct mf_platform_ops {
    /** MF_PLATFORM_OPS_VERSION the port was written against. */
    unsigned int version;
    /** Passed back to every op untouched. */
    void *payload;

    /** Fills `len` bytes with cryptographically secure random bytes. */
    int (*random)(void *payload, void *buf, size_t len);
    /** Milliseconds from an arbitrary origin; never goes backwards. */
    uint64_t (*monotonic_ms)(void *payload);
    /** Unix time in seconds, or a negative value when the device has no trusted clock. */
    int64_t (*wall_clock_s)(void *payload);

    /**
     * Opens `name` with an mf_platform_open_mode (plus flags) into `*file_out`. When WRITE
     * or RESUME creates `name`, the new (empty) file's name is durable on MF_OK (POSIX: the
     * directory is synced after a create, not after reopening an existing file).
     */
    int (*open)(void *payload, mf_platform_file **file_out, const char *name, int mode);
    /** Reads up to `len` bytes at `offset`; `*nread_out` is 0 only at the end. */
    int (*read_at)(void *payload, size_t *nread_out, mf_platform_file *file, uint64_t offset,
                   void *buf, size_t len);
    /** Appends all `len` bytes or fails. */
    int (*write)(void *payload, mf_platform_file *file, const void *buf, size_t len);
    /** Makes the written bytes durable (POSIX: fsync); the file's name is not synced. */
    int (*sync)(void *payload, mf_platform_file *file);
    /** Releases `file`; never fails (a write error surfaces in write or sync). */
    void (*close)(void *payload, mf_platform_file *file);
    /** Size in bytes of the object called `name`. */
    int (*size)(void *payload, uint64_t *size_out, const char *name);
    /**
     * Replaces `to` with `from` atomically and durably: after MF_OK a power cut leaves
     * `to` with the new content (POSIX: rename, then fsync of the directory).
     */
    int (*rename)(void *payload, const char *from, const char *to);
    /**
     * Removes `name`; MF_E_NOTFOUND when it did not exist. Not durable by itself: after a
     * power cut the name may be back, until a later rename in the same directory.
     */
    int (*remove)(void *payload, const char *name);
    /**
     * Creates the directory `name`; MF_OK when it already exists. A directory it creates
     * is durable on MF_OK (POSIX: mkdir, then fsync of the parent).
     */
    int (*mkdir)(void *payload, const char *name);
    /* ---- version 2 ---- */
    /**
     * Cuts `file` (opened with MF_PLATFORM_OPEN_RESUME) to `size` bytes; later writes
     * append from there. NULL or a version-1 port: downloads and delta applies restart
     * from zero instead of resuming.
     */
    int (*truncate)(void *payload, mf_platform_file *file, uint64_t size);
} mf_platform_ops;

MF_END_DECLS

#endif /* MF_SYS_PLATFORM_H */
