#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Proves scripts/checksrc catches what it promises: runs it on a scratch git tree holding one
# clean file and files with each kind of violation, and checks each is reported.
set -euo pipefail
checksrc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/sdk/agent" "$tmp/tests/unit"
cp "$checksrc" "$tmp/scripts/checksrc"
cd "$tmp"
git init -q .

good='/* SPDX-License-Identifier: Apache-2.0 */
int ok(void);
int ok(void)
{
    return 0; /* "free(" inside a comment or string is fine: "http://x" */
}'
printf '%s\n' "$good" > sdk/agent/good.c
git add sdk/agent/good.c
if ! scripts/checksrc > out.txt; then
    cat out.txt
    echo "FAIL: a clean tree was rejected"
    exit 1
fi

printf 'int no_spdx;\n' > sdk/agent/nospdx.c
printf '/* SPDX-License-Identifier: Apache-2.0 */\nvoid f(char *d) { strcpy(d, "x"); }\n' > sdk/agent/banned.c
printf '/* SPDX-License-Identifier: Apache-2.0 */\nvoid *g(void) { return malloc(4); }\n' > sdk/agent/raw.c
printf '/* SPDX-License-Identifier: Apache-2.0 */\nint h; // c++ comment\n' > sdk/agent/cxx.c
printf '/* SPDX-License-Identifier: Apache-2.0 */\nvoid *t(void) { return malloc(4); }\n' > tests/unit/test_ok.c
git add -A
if scripts/checksrc > out.txt; then
    cat out.txt
    echo "FAIL: violations were not caught"
    exit 1
fi
status=0
for want in "nospdx.c:1: missing SPDX" "banned.c:2: banned function 'strcpy'" \
            "raw.c:2: raw allocation 'malloc'" "cxx.c:2: C++ comment"; do
    if ! grep -q "$want" out.txt; then
        echo "FAIL: expected '$want' in:"
        cat out.txt
        status=1
    fi
done
if grep -q "test_ok.c" out.txt; then
    echo "FAIL: tests may allocate with malloc"
    status=1
fi
[ $status -eq 0 ] && echo "checksrc self-test: 1 passed, 0 failed"
exit $status
