#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SDK as an app team gets it (examples/embed): `cmake --install` of this build tree into a
# temporary prefix, then examples/embed built against that prefix only, twice: with the cc
# line of `pkg-config --cflags --libs modelferry` (libmf.so) and with find_package(modelferry)
# (modelferry::mf_static, libmf.a and the libraries its config finds). Both programs run as
# two devices against a real mf-server on 127.0.0.1 that released a signed model and has an
# offload teacher: each must enroll, install the released bytes, confirm them, ask the
# teacher, and the server must list the device at that version with its runtime report.
# Usage: sdk_consumer.sh BIN_DIR BUILD_DIR [EXTRA_CFLAGS]   (ctest: integration_sdk_consumer;
# EXTRA_CFLAGS carries -fsanitize=... when the tree is a sanitizer build)
set -uo pipefail
BIN=$1
BUILD=$2
extra_cflags=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

work=$(mktemp -d /tmp/mf-consumer.XXXXXX)
trap 'mf_stack_stop; rm -rf "$work"' EXIT
check() { mf_check "$@"; }
prefix=$work/prefix
model=embedded

# --- the installed SDK -------------------------------------------------------------------------
check "cmake --install into a temporary prefix" \
    cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log" 2>&1
check "  ... libmf.so.0 and libmf.a" \
    test -e "$prefix/lib/libmf.so.0" -a -e "$prefix/lib/libmf.a"
check "  ... the public headers (mf/version.h made from its .in) and nothing else" \
    bash -c "cd '$root/sdk/include' && diff <( (find . -name '*.h'; echo ./mf/version.h) | sort) \
                                           <(cd '$prefix/include' && find . -type f | sort)"
check "  ... the CMake package and modelferry.pc" \
    test -e "$prefix/lib/cmake/modelferry/modelferryConfig.cmake" \
        -a -e "$prefix/lib/cmake/modelferry/modelferryConfigVersion.cmake" \
        -a -e "$prefix/lib/pkgconfig/modelferry.pc"
check "  ... the programs" test -x "$prefix/bin/mf-agent" -a -x "$prefix/bin/mf-server" \
    -a -x "$prefix/bin/mfctl" -a -x "$prefix/bin/mf-delta"
check "libmf.so exports only mf_ symbols" \
    bash -c "! nm -D --defined-only '$prefix/lib/libmf.so' | awk '{print \$3}' | grep -v '^mf_'"
check "libmf.so keeps internal mf_<module>__ functions hidden" \
    bash -c "! nm -D --defined-only '$prefix/lib/libmf.so' | grep -q '__'"

# --- examples/embed against the prefix, twice ------------------------------------------------
cp "$root/examples/embed/embed.c" "$work/"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046,SC2086 # pkg-config's flags are a word list by design
check "embed built with the pkg-config cc line (-Werror)" \
    cc -std=c11 -Wall -Wextra -Werror $extra_cflags -o "$work/mf-embed-pc" "$work/embed.c" \
        $(pkg-config --cflags --libs modelferry)
check "embed built with find_package(modelferry), static libmf" \
    bash -c "cmake -S '$root/examples/embed' -B '$work/embed-cmake' -DMF_EMBED_STATIC=ON \
                 -DCMAKE_PREFIX_PATH='$prefix' -DCMAKE_C_FLAGS='-Werror $extra_cflags' \
                 >'$work/embed-cmake.log' 2>&1 &&
             cmake --build '$work/embed-cmake' >>'$work/embed-cmake.log' 2>&1"
check "  ... with no libmf.so in its dependencies" \
    bash -c "! ldd '$work/embed-cmake/mf-embed' | grep -q libmf"
unset PKG_CONFIG_PATH

# --- a server with a released model and an offload teacher -----------------------------------
# The teacher answers class 1 at 0.8; the app's output scores 1/3, below the 0.9 threshold.
mf_offload_config "$work" "$model" '[0.1, 0.8, 0.1]' 0.9
MF_SERVE_ARGS="--offload-config $work/offload.json" mf_stack_start "$work/server" \
    "$work/server.log" || exit 1
check "trust chain installed" mf_trust_setup "$work/keys"
mf_make_model "$work/v1.bin" 65536 consumer-v1
check "publish $model v1 (signed release)" mf_publish "$model" v1 "$work/v1.bin" \
    >"$work/publish.log"

# run_embed NAME PROGRAM: one device, state in $work/state-NAME, output in $work/NAME.out.
run_embed() {
    LD_LIBRARY_PATH=$prefix/lib timeout 60 "$2" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
        "$MF_ROOT_FILE" "$work/state-$1" "$1" "$model" >"$work/$1.out" 2>"$work/$1.err"
}
for dev in embed-pc embed-cmake; do
    prog=$work/mf-embed-pc
    [ "$dev" = embed-cmake ] && prog=$work/embed-cmake/mf-embed
    mkdir -p "$work/state-$dev"
    check "$dev: enrolls, installs, confirms, offloads (exit 0)" run_embed "$dev" "$prog"
    check "  ... installed $model v1" grep -qx "mf-embed: installed $model v1" "$work/$dev.out"
    check "  ... confirmed it" grep -qx "mf-embed: confirmed $model v1 (pending 0)" \
        "$work/$dev.out"
    check "  ... the installed bytes are the published ones" \
        cmp -s "$(mf_active_path "$work/state-$dev" "$model")" "$work/v1.bin"
    check "  ... the teacher answered its uncertain output" \
        grep -q "reason teacher by_teacher 1 label 1" "$work/$dev.out"
    check "  ... server lists it at v1, installed" \
        bash -c "mfctl_admin() { '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' \"\$@\"; }
                 mfctl_admin devices | grep -Eq '^$dev +.*$model +v1 +installed'"
done
mfctl_admin versions stats "$model" >"$work/stats.txt" 2>&1
check "server has the runtime reports (v1 with a latency P99)" \
    sh -c "grep -q '^v1 ' '$work/stats.txt' && grep -q P99_US '$work/stats.txt'"

if [ "$MF_FAILED" -ne 0 ]; then
    for f in install.log embed-cmake.log embed-pc.out embed-pc.err embed-cmake.out \
        embed-cmake.err stats.txt server.log; do
        [ -f "$work/$f" ] && { echo "--- $f"; tail -n 30 "$work/$f"; }
    done
fi
echo "sdk_consumer: $MF_PASSED passed, $MF_FAILED failed"
[ "$MF_FAILED" -eq 0 ]
