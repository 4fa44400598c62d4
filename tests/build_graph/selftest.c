/* SPDX-License-Identifier: Apache-2.0 */
/* Placeholder translation unit for the dependency-graph self-test; never linked. */
int mf_selftest_placeholder(void);

int mf_selftest_placeholder(void)
{
    return 0;
}
