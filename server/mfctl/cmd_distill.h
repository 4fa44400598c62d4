/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl distill and mfctl versions show (docs/distill.md). */
#ifndef MFCTL_CMD_DISTILL_H
#define MFCTL_CMD_DISTILL_H

#include "mfctl.h"

#define MFCTL_DISTILL_USAGE                                                                        \
    "usage: mfctl [global options] distill run MODEL [--json]\n"                                   \
    "       mfctl [global options] distill status [ID] [--json]\n"                                 \
    "       mfctl [global options] distill wait ID [SECONDS] [--json]\n"                           \
    "run queues a distillation run of MODEL (a model of the server's --distill-config): a\n"       \
    "candidate trained on the seed set and the fleet's teacher-labelled samples, gated on the\n"   \
    "held-out set against the version the fleet runs, published with a canary rollout only\n"      \
    "if its cascade accuracy is not lower. status lists runs, or shows one with its record.\n"     \
    "wait polls run ID until it ends (default 600 s); exit status 0 only if it published.\n"

int mfctl__cmd_distill(struct mfctl *c, int argc, char **argv);
/* mfctl versions show MODEL VERSION [--json]: the version and its provenance. */
int mfctl__versions_show(struct mfctl *c, const char *model, const char *version, int json);

/* Printers, separate from the network so tests feed them JSON. */
int mfctl__print_run(struct mfctl *c, const char *json, size_t len);
int mfctl__print_runs(struct mfctl *c, const char *json, size_t len);
int mfctl__print_version(struct mfctl *c, const char *json, size_t len);

#endif /* MFCTL_CMD_DISTILL_H */
