/* SPDX-License-Identifier: Apache-2.0 */
/* mfctl rollout and mfctl versions stats (docs/rollouts.md). */
#ifndef MFCTL_CMD_ROLLOUT_H
#define MFCTL_CMD_ROLLOUT_H

#include "mfctl.h"

#define MFCTL_ROLLOUT_USAGE                                                                        \
    "usage: mfctl [global options] rollout create MODEL VERSION PLAN.json [PREVIOUS] [--json]\n"   \
    "       mfctl [global options] rollout status [ID] [--json]\n"                                 \
    "       mfctl [global options] rollout status ID --watch [--interval S] [--timeout S]\n"       \
    "       mfctl [global options] rollout pause|resume|abort|rollback ID [--json]\n"              \
    "PLAN.json: {\"soak_s\": S, \"min_devices\": N, \"waves\": [{\"percent\": P} |\n"              \
    "{\"group\": G} | {\"devices\": [ID...]}], \"red_lines\": [{\"metric\": M, \"max\": X} |\n"    \
    "{\"metric\": M, \"relative\": F}]}; metrics: install_failure_rate, health_rollback_rate,\n"   \
    "p99_latency_us, peak_memory, offload_rate, teacher_agreement (\"min\" for it).\n"             \
    "Optional: \"line_min_devices\" (2), \"line_min_inferences\" (100), and\n"                     \
    "\"allow_no_red_lines\": true, which an empty red_lines needs. Unknown keys are refused.\n"    \
    "A wave's soak of S seconds starts once N of its devices report VERSION; it advances when\n"   \
    "soaked with every line clean on enough evidence (a line without it is waiting and\n"          \
    "blocks); after the last wave VERSION is promoted (the channel default). Relative lines\n"     \
    "compare with the control group: devices outside the admitted waves still on PREVIOUS.\n"      \
    "A breached line halts the rollout and rolls the fleet back to PREVIOUS (default: the\n"       \
    "release promoted last that never halted). status without ID lists rollouts; with ID\n"        \
    "shows waves, devices, each red line's value against its bound or what it waits for,\n"        \
    "the whole plan and the events (ISO 8601 UTC). --watch redraws it every S seconds\n"           \
    "(default 5) until the rollout ends or the timeout (default 3600 s) passes; exit status\n"     \
    "0 only if it ended done.\n"

#define MFCTL_PROMOTE_USAGE                                                                        \
    "usage: mfctl [global options] promote MODEL VERSION --force [--json]\n"                       \
    "Makes released VERSION the channel default at once: every device without a rollout,\n"        \
    "pin or channel version is assigned it at its next check-in, with no canary. A published\n"    \
    "release is not deployed until a rollout finishes its last wave or this is run; --force\n"     \
    "says that is meant. Refused while a rollout of MODEL is running or paused.\n"

/* mfctl versions stats MODEL [--json]: mfctl versions calls it with MODEL checked. */
int mfctl__versions_stats(struct mfctl *c, const char *model, int json);
int mfctl__cmd_rollout(struct mfctl *c, int argc, char **argv);
/* rollout status ID --watch (cmd_rollout_watch.c): the exit status. */
int mfctl__rollout_watch(struct mfctl *c, const char *id, int json, unsigned interval_s,
                         unsigned timeout_s);
int mfctl__cmd_promote(struct mfctl *c, int argc, char **argv);

/* Printers, separate from the network so tests feed them JSON. */
int mfctl__print_rollout(struct mfctl *c, const char *json, size_t len);
int mfctl__print_rollouts(struct mfctl *c, const char *json, size_t len);
int mfctl__print_stats(struct mfctl *c, const char *json, size_t len);

#endif /* MFCTL_CMD_ROLLOUT_H */
