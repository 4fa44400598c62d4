/* SPDX-License-Identifier: Apache-2.0 */
/* Placeholder translation unit of the folder-cycle self-test (folder B); never linked. */
int mf_selftest_cycle_b(void);

int mf_selftest_cycle_b(void)
{
    return 0;
}
