/* SPDX-License-Identifier: Apache-2.0 */
/* Name and identifier syntax checks (see names.h). */
#include "common/names.h"

#include "mf_hex.h"
#include "mf_name_chars.h"

#include <string.h>

int mf_names__valid_id(const char *s)
{
    /* "." and ".." match the character class but name directories, not objects. */
    return mf_name__chars_ok(s, MF_NAME_MAX) && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int mf_names__valid_sha256(const char *s)
{
    return mf_hex__is_sha256(s);
}

int mf_names__valid_nonce(const char *s)
{
    uint8_t raw[16];

    return strlen(s) == 32 && mf_hex__decode(raw, sizeof(raw), s, 32) == 0;
}
