#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end delivery against the real programs: mf-server on 127.0.0.1 (ephemeral port,
# SQLite store), mfctl publishing, mf-agent installing. Checks the installed bytes equal the
# published ones, and that bad input in this slice is refused without losing the installed
# model: unknown device credential, wrong enrollment token, wrong admin token, a blob whose
# bytes do not match its sha256, a missing blob.
# Usage: e2e_delivery.sh BIN_DIR   (run by ctest as integration_e2e_delivery)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

work=$(mktemp -d /tmp/mf-e2e.XXXXXX)
trap 'mf_stack_stop; rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check "what" command...
    local what=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok   - $what"
    else
        failed=$((failed + 1))
        echo "FAIL - $what"
    fi
}
agent() { "$BIN/mf-agent" --config "$work/$1.json" run --once >>"$work/$1.log" 2>&1; }
http_code() { # http_code TOKEN METHOD PATH [BODY]
    curl -s -o /dev/null -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
        ${4:+-H 'Content-Type: application/json' --data "$4"} "$MF_URL$3"
}

mf_stack_start "$work/server" "$work/server.log" || exit 1

# --- the happy path -------------------------------------------------------------------------
mf_make_model "$work/v1.bin" 2097152 e2e-v1
mf_make_model "$work/v2.bin" 2097152 e2e-v2
check "publish v1" mfctl_admin publish detector v1 "$work/v1.bin"
mkdir -p "$work/devA"
mf_agent_config "$work/devA.json" devA "$work/devA" "$MF_ENROLL_TOKEN_FILE" detector
check "agent enrolls, checks in, installs v1" agent devA
active=$(mf_active_path "$work/devA" detector)
check "installed bytes equal published v1" cmp -s "$active" "$work/v1.bin"
check "credential stored with mode 0600" test "$(stat -c %a "$work/devA/credential")" = 600
before=$(stat -c %Y.%i "$active")
check "second run is a no-op" agent devA
check "  ... and leaves the slot untouched" test "$(stat -c %Y.%i "$active")" = "$before"
check "server lists devA at v1, installed" \
    bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices --json |
             grep -q '\"device_id\":\"devA\"' && \
             '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices |
             grep -Eq 'devA +.*detector +v1 +installed'"

# --- wrong credentials ----------------------------------------------------------------------
fake_cred="mfd_$(openssl rand -hex 32)"
check "check-in with an unknown device credential: 401" \
    test "$(http_code "$fake_cred" POST /v1/checkin '{"nonce":"00112233445566778899aabbccddeeff","models":[]}')" = 401
check "blob download with an unknown device credential: 401" \
    test "$(http_code "$fake_cred" GET "/v1/blobs/$(sha256sum "$work/v1.bin" | cut -c1-64)")" = 401
echo "mfe_$(openssl rand -hex 32)" >"$work/wrong.token"
mkdir -p "$work/devB"
mf_agent_config "$work/devB.json" devB "$work/devB" "$work/wrong.token" detector
check "agent with a wrong enrollment token fails" bash -c "! '$BIN/mf-agent' --config '$work/devB.json' run --once >'$work/devB.log' 2>&1"
check "  ... says why" grep -qi 'enroll' "$work/devB.log"
check "  ... and installs nothing" test ! -e "$work/devB/credential" -a ! -e "$work/devB/models/detector/state.json"
echo "mfa_$(openssl rand -hex 32)" >"$work/wrong-admin.token"
check "mfctl publish with a wrong admin token fails" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$work/wrong-admin.token' publish detector v9 '$work/v2.bin' 2>/dev/null"
check "  ... and publishes nothing" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' models | grep -q ' v9 '"

# --- a blob whose bytes do not match its sha256 ---------------------------------------------
check "publish v2" mfctl_admin publish detector v2 "$work/v2.bin"
v2sha=$(sha256sum "$work/v2.bin" | cut -c1-64)
blob="$work/server/blobs/${v2sha:0:2}/$v2sha"
check "v2 blob stored content-addressed" test -f "$blob"
cp "$blob" "$work/v2.saved"
printf '\xff' | dd of="$blob" bs=1 seek=1000000 conv=notrunc status=none
check "agent refuses the corrupted v2" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-bad.log' 2>&1"
check "  ... names the digest mismatch" grep -qi 'sha256' "$work/devA-bad.log"
active=$(mf_active_path "$work/devA" detector)
check "  ... keeps v1 active, bytes intact" cmp -s "$active" "$work/v1.bin"
check "  ... leaves no partial download" bash -c "! ls '$work/devA/models/detector/' | grep -q '\\.part'"
check "  ... and the server saw a failed report" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -Eq 'devA +.*detector +v2 +failed'"

# --- a missing blob -------------------------------------------------------------------------
rm -f "$blob"
cred=$(cat "$work/devA/credential")
check "request for a missing blob: 404" test "$(http_code "$cred" GET "/v1/blobs/$v2sha")" = 404
check "request for a never-published blob: 404" test "$(http_code "$cred" GET "/v1/blobs/$(openssl rand -hex 32)")" = 404
check "agent fails cleanly when the assigned blob is gone" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-404.log' 2>&1"
active=$(mf_active_path "$work/devA" detector)
check "  ... and keeps v1" cmp -s "$active" "$work/v1.bin"

# --- recovery: the blob is restored, the update goes through ---------------------------------
cp "$work/v2.saved" "$blob"
check "agent installs v2 once the blob is good" agent devA
active=$(mf_active_path "$work/devA" detector)
check "installed bytes equal published v2" cmp -s "$active" "$work/v2.bin"
check "server lists devA at v2, installed" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -Eq 'devA +.*detector +v2 +installed'"

echo "$passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    for f in "$work"/*.log; do echo "--- $f"; tail -5 "$f"; done
    exit 1
fi
