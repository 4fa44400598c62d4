/* SPDX-License-Identifier: Apache-2.0 */
/* Placeholder translation unit of the folder-cycle self-test (folder A); never linked. */
int mf_selftest_cycle_a(void);

int mf_selftest_cycle_a(void)
{
    return 0;
}
