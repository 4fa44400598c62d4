/* SPDX-License-Identifier: Apache-2.0 */
/* mf_version(): the numbers the library was compiled with, for apps that check at run time. */
#include "mf/version.h"

unsigned int mf_version(void)
{
    return MF_VERSION_NUMBER;
}

const char *mf_version_string(void)
{
    return MF_VERSION_STRING;
}
