#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Proves scripts/depcheck catches what it promises: a clean scratch tree passes, then each
# kind of violation (folder cycle, server header from examples/, repeated file name, two-file
# call cycle from real object files) is added and must be reported by name, while a pair
# declared one module in both opening comments, or listed in scripts/depcheck.allow, passes.
set -euo pipefail
depcheck=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/lib/a" "$tmp/lib/b" "$tmp/server/s" "$tmp/examples/e" "$tmp/build"
cp "$depcheck" "$tmp/scripts/depcheck"
cd "$tmp"
cc=${CC:-cc}

spdx='/* SPDX-License-Identifier: Apache-2.0 */'
printf '%s\n#include "b/b_api.h"\nint a_one(void);\nint a_one(void) { return b_one(); }\n' \
    "$spdx" > lib/a/a_one.c
printf '%s\nint b_one(void);\n' "$spdx" > lib/b/b_api.h
printf '%s\n#include "b_api.h"\nint b_one(void) { return 1; }\n' "$spdx" > lib/b/b_one.c
printf '%s\n#include "e_api.h"\n' "$spdx" > examples/e/e_main.c
printf '%s\n' "$spdx" > examples/e/e_api.h
# Two files that call each other but say, in both opening comments, that they are one module.
printf '/* SPDX-License-Identifier: Apache-2.0 */\n/* One module with m_two.c. */\nint m_two(int);\nint m_one(int n);\nint m_one(int n) { return n ? m_two(n - 1) : 0; }\n' > lib/a/m_one.c
printf '/* SPDX-License-Identifier: Apache-2.0 */\n/* One module with m_one.c. */\nint m_one(int);\nint m_two(int n);\nint m_two(int n) { return n ? m_one(n - 1) : 1; }\n' > lib/a/m_two.c
# Two that call each other and are listed in the allow file.
printf '%s\nint l_two(int);\nint l_one(int n);\nint l_one(int n) { return n ? l_two(n - 1) : 0; }\n' "$spdx" > lib/b/l_one.c
printf '%s\nint l_one(int);\nint l_two(int n);\nint l_two(int n) { return n ? l_one(n - 1) : 1; }\n' "$spdx" > lib/b/l_two.c
printf '# SPDX-License-Identifier: Apache-2.0\nlib/b/l_one.c lib/b/l_two.c  # known\n' > scripts/depcheck.allow

# compile_commands.json and objects for every .c under lib/ and server/ (what CMake writes).
compile_all() {
    local first=1
    printf '[' > build/compile_commands.json
    for src in $(find lib server -name '*.c' | sort); do
        local obj="build/${src//\//_}.o"
        "$cc" -c -I lib -I examples/e -o "$obj" "$src"
        [ $first = 1 ] || printf ',' >> build/compile_commands.json
        first=0
        printf '{"directory":"%s","file":"%s","command":"%s -c -o %s %s"}' \
            "$tmp" "$tmp/$src" "$cc" "$tmp/$obj" "$src" >> build/compile_commands.json
    done
    printf ']\n' >> build/compile_commands.json
}

compile_all
if ! scripts/depcheck > out.txt; then
    cat out.txt
    echo "FAIL: a clean tree was rejected"
    exit 1
fi
grep -q "calls: 6 objects, 2 two-file call cycles (2 declared one module or allowed)" out.txt || {
    cat out.txt
    echo "FAIL: the declared and allowed pairs were not both seen"
    exit 1
}

# Each violation, at once.
printf '%s\n#include "a/a_api.h"\n' "$spdx" > lib/b/b_two.c             # lib/b -> lib/a
printf '%s\n' "$spdx" > lib/a/a_api.h
printf '%s\n#include "e_api.h"\n' "$spdx" > server/s/s_main.c           # server -> examples
printf '%s\n' "$spdx" > server/s/a_one.c                                # name of lib/a/a_one.c
printf '%s\nint c_two(int);\nint c_one(int n);\nint c_one(int n) { return n ? c_two(n - 1) : 0; }\n' \
    "$spdx" > lib/a/c_one.c
printf '%s\nint c_one(int);\nint c_two(int n);\nint c_two(int n) { return n ? c_one(n - 1) : 1; }\n' \
    "$spdx" > lib/a/c_two.c
compile_all
if scripts/depcheck > out.txt; then
    cat out.txt
    echo "FAIL: violations were not caught"
    exit 1
fi
status=0
for want in "folder cycle: lib/a <-> lib/b" \
    "server reaches examples/: server/s/s_main.c includes examples/e/e_api.h" \
    "repeated file name a_one.c: lib/a/a_one.c server/s/a_one.c" \
    "two-file call cycle: lib/a/c_one.c <-> lib/a/c_two.c"; do
    if ! grep -qF "$want" out.txt; then
        echo "FAIL: not reported: $want"
        status=1
    fi
done
for unwanted in "m_one.c <->" "l_one.c <->"; do
    if grep -qF "two-file call cycle: lib/a/$unwanted" out.txt ||
        grep -qF "two-file call cycle: lib/b/$unwanted" out.txt; then
        echo "FAIL: reported although declared or allowed: $unwanted"
        status=1
    fi
done

# A partial build must not pass by reading less.
rm -f build/lib_a_c_one.c.o
if scripts/depcheck --only calls > out.txt || ! grep -q "object files not built" out.txt; then
    cat out.txt
    echo "FAIL: a missing object file was not refused"
    status=1
fi
[ $status = 0 ] || cat out.txt
exit $status
