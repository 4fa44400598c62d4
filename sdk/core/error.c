/* SPDX-License-Identifier: Apache-2.0 */
/* mf_strerror(): static names for the stable error codes of mf/error.h. */
#include "mf/error.h"

const char *mf_strerror(int code)
{
    switch (code) {
    case MF_OK:
        return "success";
    case MF_AGAIN:
        return "more input or output room needed";
    case MF_E_GENERIC:
        return "generic error";
    case MF_E_NOMEM:
        return "out of memory";
    case MF_E_INVALID:
        return "invalid input";
    case MF_E_LIMIT:
        return "limit exceeded";
    case MF_E_SIGNATURE:
        return "signature or digest mismatch";
    case MF_E_IO:
        return "I/O error";
    case MF_E_NOTFOUND:
        return "not found";
    case MF_E_STATE:
        return "invalid state";
    case MF_E_AUTH:
        return "authentication failed";
    case MF_E_NET:
        return "network error";
    default:
        return "unknown error";
    }
}
