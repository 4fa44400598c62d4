/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl: the ops CLI of mf-server (see mfctl.c for the command table). */
#include "mfctl.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    return mfctl__main(argc, argv, stdout, stderr);
}
