#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Footprint of libmf on a target (bench/agent/README.md, "Footprint"): links examples/embed
# statically against BUILD_DIR/libmf.a with the target's compiler (its libcurl, zstd, mbedTLS
# and cJSON stay shared, as on a device image), strips it, and sums from the linker map the
# input sections that came out of libmf.a: .text (code), .rodata (constants), .data and .bss.
# Only what the app pulls in is counted; the archive's unreferenced objects are not linked.
# Usage: bench/agent/footprint.sh BUILD_DIR [CC]   e.g. build-aarch64 aarch64-linux-gnu-gcc
set -euo pipefail
build=$1
cc=${2:-cc}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/mf-footprint.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The public headers, and mf/version.h, which the build generates from project(VERSION).
"$cc" -std=c11 -O2 -I"$root/sdk/include" -I"$build/generated/include" -o "$work/mf-embed" "$root/examples/embed/embed.c" \
    "$build/libmf.a" -lcurl -lzstd -lmbedtls -lmbedx509 -lmbedcrypto -lcjson -lm \
    -Wl,-Map="$work/map" -s
python3 - "$work/map" "$work/mf-embed" <<'PY'
import os, re, sys
sizes = {}
pending = None
for line in open(sys.argv[1]):
    # " .text  0xADDR  0xSIZE  path/libmf.a(obj.o)", or the section name alone on its line
    # with the rest on the next one.
    m = re.match(r'^ (\.[a-z]+)(\S*)\s*$', line)
    if m:
        pending = m.group(1)
        continue
    m = re.match(r'^ (\.[a-z]+)\S*\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)', line)
    if m:
        sec, size, src = m.group(1), int(m.group(3), 16), m.group(4)
    else:
        m = re.match(r'^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)', line)
        if not (m and pending):
            pending = None
            continue
        sec, size, src = pending, int(m.group(2), 16), m.group(3)
    pending = None
    if 'libmf.a(' in src and sec in ('.text', '.rodata', '.data', '.bss'):
        sizes[sec] = sizes.get(sec, 0) + size
for sec in ('.text', '.rodata', '.data', '.bss'):
    print('libmf %-8s %8d bytes (%.1f KiB)' % (sec, sizes.get(sec, 0), sizes.get(sec, 0) / 1024))
print('mf-embed stripped file %d bytes' % os.path.getsize(sys.argv[2]))
PY
