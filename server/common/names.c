/* SPDX-License-Identifier: Apache-2.0 */
/* Name and identifier syntax checks (see names.h). */
#include "common/names.h"

#include "mf_hex.h"

#include <string.h>

int mf_names__valid_id(const char *s)
{
    size_t i;

    for (i = 0; s[i]; i++) {
        char c = s[i];

        if (i >= MF_NAME_MAX)
            return 0;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    /* "." and ".." match the character class but name directories, not objects. */
    return i > 0 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
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
