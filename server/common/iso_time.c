/* SPDX-License-Identifier: Apache-2.0 */
/* ISO 8601 UTC times of the admin API (iso_time.h). */
#define _DEFAULT_SOURCE /* timegm */
#include "common/iso_time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char *mf_iso_time__format(char out[MF_ISO_TIME_SIZE], int64_t t)
{
    time_t secs = (time_t)t;
    struct tm tm;

    out[0] = '\0';
    if (t < 0 || !gmtime_r(&secs, &tm) ||
        strftime(out, MF_ISO_TIME_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
    return out;
}

/* `n` decimal digits at `s` as a number; -1 when one is not a digit. */
static int digits(const char *s, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int parse_iso(int64_t *out, const char *s)
{
    struct tm tm;
    char back[MF_ISO_TIME_SIZE];
    time_t t;

    if (strlen(s) != MF_ISO_TIME_SIZE - 1 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
        s[13] != ':' || s[16] != ':' || s[19] != 'Z')
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = digits(s, 4) - 1900;
    tm.tm_mon = digits(s + 5, 2) - 1;
    tm.tm_mday = digits(s + 8, 2);
    tm.tm_hour = digits(s + 11, 2);
    tm.tm_min = digits(s + 14, 2);
    tm.tm_sec = digits(s + 17, 2);
    if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_hour < 0 || tm.tm_min < 0 ||
        tm.tm_sec < 0)
        return -1;
    t = timegm(&tm);
    /* timegm normalises "02-30" into March: a date that does not format back is refused. */
    if (t < 0 || strcmp(mf_iso_time__format(back, (int64_t)t), s) != 0)
        return -1;
    *out = (int64_t)t;
    return 0;
}

int mf_iso_time__parse(int64_t *out, const char *s)
{
    int64_t v = 0;
    size_t n = strlen(s);

    if (n == 0)
        return -1;
    if (strspn(s, "0123456789") != n)
        return parse_iso(out, s);
    if (n > 12) /* past year 33000: not a time anyone means */
        return -1;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    *out = v;
    return 0;
}
