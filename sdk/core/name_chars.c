/* SPDX-License-Identifier: Apache-2.0 */
/* The character rule of names (mf_name_chars.h). */
#include "mf_name_chars.h"

int mf_name__chars_ok(const char *s, size_t max)
{
    size_t i;

    for (i = 0; s[i]; i++) {
        char c = s[i];

        if (i >= max)
            return 0;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return i > 0;
}
