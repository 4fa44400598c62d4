/* SPDX-License-Identifier: Apache-2.0 */
/* The golden trust of the fuzz targets (fuzz_golden.h), read from tests/data/manifest/,
 * located from this file's path. */
#include "fuzz_golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *read_golden(size_t *len, const char *name)
{
    const char *slash = strrchr(__FILE__, '/');
    char path[1024];
    uint8_t *buf = NULL;
    FILE *f;
    long n;

    (void)snprintf(path, sizeof(path), "%.*s/../data/manifest/%s",
                   slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".", name);
    f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)n;
    }
    (void)fclose(f);
    return buf;
}

mf_trust *mf_fuzz__golden_trust(int root_only)
{
    static uint8_t *root, *keys;
    static size_t rl, kl;
    static int loaded;
    mf_trust *t = NULL;

    if (!loaded) {
        root = read_golden(&rl, "root.json");
        keys = read_golden(&kl, "keys.json");
        loaded = 1;
    }
    if (!root || !keys || mf_trust_new(&t, NULL, NULL) < 0)
        return NULL;
    if (mf_trust_bootstrap(t, root, rl, 0) < 0 ||
        (!root_only && mf_trust_update_keys(t, keys, kl, 0) < 0)) {
        mf_trust_free(t);
        return NULL;
    }
    return t;
}
