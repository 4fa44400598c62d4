/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line front end of the delta engine, shared by the standalone `mf-delta` tool and
 * `mfctl diff|patch`. Each function takes the arguments after the command name and returns
 * a process exit status (0 ok, 1 failure, 2 usage).
 */
#ifndef MF_DIFF_DELTA_CLI_H
#define MF_DIFF_DELTA_CLI_H

/* diff [--format mf|bsdiff40] [--threads N] [--level L] [--window BYTES] OLD NEW PATCH */
int mf_delta_cli_diff(int argc, char **argv);
/* patch [--format mf|bsdiff40] [--window BYTES] [--expect-sha256 HEX | --unverified]
 * OLD PATCH NEW (format detected when omitted; --window raises the apply memory bound above
 * the default 512 KiB; a BSDIFF40 patch needs --expect-sha256, or --unverified, since the
 * format has no checksum). NEW appears only once complete and checked. */
int mf_delta_cli_patch(int argc, char **argv);
/* info PATCH: header and per-block encodings of an mf patch */
int mf_delta_cli_info(int argc, char **argv);

#endif /* MF_DIFF_DELTA_CLI_H */
