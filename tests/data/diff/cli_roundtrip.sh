#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CLI test of mf-delta (same code as `mfctl diff|patch`): round trips in both formats,
# --info, and refusal of corrupt and truncated patches with a non-zero exit and no NEW left.
# BSDIFF40 has no checksum: it applies only with --expect-sha256 (checked) or --unverified.
# Usage: cli_roundtrip.sh PATH/TO/mf-delta
set -eu
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Deterministic data without external tools: repeated digests of a counter.
i=0
: >old
while [ $i -lt 3000 ]; do
    printf '%08d weights block %d\n' $i $((i * 7919 % 65536)) >>old
    i=$((i + 1))
done
sed -e 's/block 1/BLOCK 1/' -e '100,140d' old >new
printf 'appended tail\n' >>new

"$tool" diff old new p.mf
"$tool" patch old p.mf out.mf
cmp out.mf new
"$tool" info p.mf | grep -q '^format mf delta v1'
# A patch made for a larger window needs --window on apply (memory bound, MF_E_LIMIT).
i=0
while [ $i -lt 12 ]; do cat old; i=$((i + 1)); done >big.old
{ cat new; cat big.old; } >big.new
"$tool" diff --window 2097152 big.old big.new p.big
if "$tool" patch --window 4096 big.old p.big out.big 2>/dev/null; then
    echo "patch above --window accepted" >&2
    exit 1
fi
"$tool" patch --window 2097152 big.old p.big out.big
cmp out.big big.new
"$tool" diff --format bsdiff40 old new p.bsd
newsha=$(sha256sum new | cut -c1-64)
# Without a digest a BSDIFF40 patch is refused (exit 2), naming the option; no NEW.
if "$tool" patch old p.bsd out.bsd 2>err.txt; then
    echo "BSDIFF40 applied without --expect-sha256 or --unverified" >&2
    exit 1
fi
grep -q 'no checksum.*--expect-sha256' err.txt
test ! -e out.bsd -a ! -e out.bsd.part
"$tool" patch --expect-sha256 "$newsha" old p.bsd out.bsd
cmp out.bsd new
"$tool" patch --unverified old p.bsd out.unv
cmp out.unv new
if "$tool" patch --expect-sha256 nothex old p.bsd out.x 2>err.txt; then
    echo "bad --expect-sha256 accepted" >&2
    exit 1
fi
grep -q "'nothex' is not 64 hex digits" err.txt
# A digest that is not NEW's: refused, nothing renamed into place.
oldsha=$(sha256sum old | cut -c1-64)
if "$tool" patch --expect-sha256 "$oldsha" old p.bsd out.wrong 2>err.txt; then
    echo "output with another sha256 accepted" >&2
    exit 1
fi
grep -q "does not match --expect-sha256 $oldsha; out.wrong not written" err.txt
test ! -e out.wrong -a ! -e out.wrong.part
# Corrupted BSDIFF40 patches with the digest: an error and no NEW, or exactly NEW.
bsize=$(wc -c <p.bsd)
i=8
while [ $i -lt "$bsize" ]; do
    { head -c $i p.bsd; printf '\252'; tail -c +$((i + 2)) p.bsd; } >flip.bsd
    rm -f out.flip
    if "$tool" patch --expect-sha256 "$newsha" old flip.bsd out.flip 2>/dev/null; then
        cmp out.flip new
    elif [ -e out.flip ] || [ -e out.flip.part ]; then
        echo "a failed BSDIFF40 apply left its output (byte $i)" >&2
        exit 1
    fi
    i=$((i + 11))
done
"$tool" info p.bsd | grep -q 'BSDIFF40'
if command -v bspatch >/dev/null 2>&1; then
    bspatch old out.bsp p.bsd
    cmp out.bsp new
fi

size=$(wc -c <p.mf)
head -c $((size - 5)) p.mf >trunc.mf
if "$tool" patch old trunc.mf bad.out 2>/dev/null; then
    echo "truncated patch accepted" >&2
    exit 1
fi
test ! -e bad.out -a ! -e bad.out.part
# An mf patch checks itself; --expect-sha256 adds a check of the caller's.
"$tool" patch --expect-sha256 "$(sha256sum new | cut -c1-64)" old p.mf out.mf2
cmp out.mf2 new
if "$tool" patch --expect-sha256 "$(sha256sum old | cut -c1-64)" old p.mf out.mf3 2>/dev/null; then
    echo "mf output with another sha256 accepted" >&2
    exit 1
fi
test ! -e out.mf3
# Flip one byte in the middle of the payload.
half=$((size / 2))
{ head -c $half p.mf; printf '\377'; tail -c +$((half + 2)) p.mf; } >flip.mf
if "$tool" patch old flip.mf bad.out 2>/dev/null && cmp -s bad.out new; then
    :
elif "$tool" patch old flip.mf bad.out 2>/dev/null; then
    echo "corrupt patch produced a wrong image without an error" >&2
    exit 1
fi
# The wrong old image is refused.
printf 'x' >>old
if "$tool" patch old p.mf bad.out 2>/dev/null; then
    echo "wrong old image accepted" >&2
    exit 1
fi
echo "cli ok"
