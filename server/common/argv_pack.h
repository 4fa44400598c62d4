/* SPDX-License-Identifier: Apache-2.0 */
/* A configured command line (a JSON array of strings) packed for execv (see argv_pack.c). */
#ifndef MF_SERVER_COMMON_ARGV_PACK_H
#define MF_SERVER_COMMON_ARGV_PACK_H

#include <cjson/cJSON.h>

#include <stddef.h>

/* Copies the strings of `arr` (a JSON array; the caller has bounded its length by argv's
 * room) one after the other, NUL-terminated, into `store`, points argv[i] at each and ends
 * argv with NULL. 0, or -1 when an entry is not a string, is empty or does not fit in
 * `store_size` bytes: the caller names the setting in its message. */
int mf_argv__pack(const char **argv, char *store, size_t store_size, const cJSON *arr);

#endif /* MF_SERVER_COMMON_ARGV_PACK_H */
