/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the one character rule of names (model, version, device id), device and server. */
#ifndef MF_CORE_NAME_CHARS_H
#define MF_CORE_NAME_CHARS_H

#include <stddef.h>

/* 1 when `s` is 1..max characters of [A-Za-z0-9._-]. Callers add their own rules on top
 * (the server also refuses "." and ".."); the character class is one, so a name the
 * server accepts always passes the device's manifest parser. */
int mf_name__chars_ok(const char *s, size_t max);

#endif /* MF_CORE_NAME_CHARS_H */
