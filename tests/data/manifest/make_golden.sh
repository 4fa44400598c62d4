#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates the golden DSSE vectors of tests/unit/manifest/test_manifest_interop.c using only the
# openssl command line and coreutils: an implementation independent of manifests/, so the
# device verifier is checked against someone else's PAE, base64, DER and key ids.
# The *.key.pem files are TEST KEYS, published on purpose; never trust them anywhere.
# Usage: tests/data/manifest/make_golden.sh   (keeps existing keys; delete them to rotate)
set -eu
cd "$(dirname "$0")"

for k in root keys release director; do
    [ -f "$k.key.pem" ] || openssl ecparam -name prime256v1 -genkey -noout -out "$k.key.pem"
    openssl pkey -in "$k.key.pem" -pubout -out "$k.pub.pem"
done

spki_b64() { openssl pkey -pubin -in "$1.pub.pem" -outform DER | base64 -w0; }
keyid() { openssl pkey -pubin -in "$1.pub.pem" -outform DER | sha256sum | cut -c1-64; }
sha() { printf '%s' "$1" | sha256sum | cut -c1-64; }
keyentry() { printf '"%s":{"keytype":"ecdsa-p256-sha256","public":"%s"}' "$(keyid "$1")" "$(spki_b64 "$1")"; }

# sign TYPE PAYLOAD_FILE OUT_FILE KEY...: a DSSE envelope over PAE(TYPE, payload)
sign() {
    type=$1 payload=$2 out=$3
    shift 3
    len=$(wc -c <"$payload")
    { printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$len"; cat "$payload"; } >pae.tmp
    sigs=""
    for k in "$@"; do
        s=$(openssl dgst -sha256 -sign "$k.key.pem" pae.tmp | base64 -w0)
        sigs="$sigs${sigs:+,}{\"keyid\":\"$(keyid "$k")\",\"sig\":\"$s\"}"
    done
    printf '{"payloadType":"%s","payload":"%s","signatures":[%s]}\n' "$type" \
        "$(base64 -w0 <"$payload")" "$sigs" >"$out"
    rm -f pae.tmp
}

printf '{"_type":"root","spec_version":1,"version":1,"expires":2080000000,"keys":{%s,%s},"roles":{"root":{"keyids":["%s"],"threshold":1},"keys":{"keyids":["%s"],"threshold":1}}}' \
    "$(keyentry root)" "$(keyentry keys)" "$(keyid root)" "$(keyid keys)" >root.payload
sign application/vnd.modelferry.root+json root.payload root.json root

printf '{"_type":"keys","spec_version":1,"version":1,"expires":2080000000,"keys":{%s,%s},"roles":{"release":{"keyids":["%s"],"threshold":1},"director":{"keyids":["%s"],"threshold":1}}}' \
    "$(keyentry release)" "$(keyentry director)" "$(keyid release)" "$(keyid director)" >keys.payload
sign application/vnd.modelferry.keys+json keys.payload keys.json keys

printf '{"_type":"release","spec_version":1,"name":"detector","version":"v7","sequence":7,"sha256":"%s","size":8292,"chunk_size":4096,"chunks":["%s","%s","%s"],"deltas":[{"from_sha256":"%s","sha256":"%s","size":1234}],"security_floor":2,"created":1764500000,"expires":2080000000}' \
    "$(sha 'golden model')" "$(sha chunk0)" "$(sha chunk1)" "$(sha chunk2)" "$(sha 'model v6')" \
    "$(sha 'delta v6 to v7')" >release.payload
sign application/vnd.modelferry.release+json release.payload release.json release

printf '{"_type":"assignment","spec_version":1,"device_id":"cam-0001","model":"detector","release_sha256":"%s","nonce":"00112233445566778899aabbccddeeff","sequence":1,"pin":false,"reason":"golden"}' \
    "$(sha256sum <release.payload | cut -c1-64)" >assignment.payload
sign application/vnd.modelferry.assignment+json assignment.payload assignment.json director

{
    echo "root_keyid=$(keyid root)"
    echo "release_keyid=$(keyid release)"
    echo "model_sha256=$(sha 'golden model')"
    echo "chunk1_sha256=$(sha chunk1)"
    echo "release_digest=$(sha256sum <release.payload | cut -c1-64)"
} >expected.txt
rm -f ./*.payload
