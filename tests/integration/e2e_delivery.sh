#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end delivery against the real programs: mf-server on 127.0.0.1 (ephemeral port,
# SQLite store), the offline trust chain made with `mfctl keys` and installed with
# `mfctl trust`, signed publishing with `mfctl publish --release-key`, mf-agent provisioned
# with the root and installing. Checks the installed bytes equal the published ones, and
# that bad input is refused without losing the installed model: unknown device credential,
# wrong enrollment token, wrong admin token, a release signed by an unknown key, a blob
# tampered on the server (bad chunk), a missing blob, an unreleased model pushed by an
# attacker holding the director key and the store, a replayed check-in answer, and a
# release below the device's security floor; a chunk-tree release (the chunk list a blob of
# its own, a bad chunk caught at its chunk). A second device gets a delta update through
# the server's precomputed delta, rolls it back with `mf-agent rollback` (and is not offered
# it again), and holds a pin until `mf-agent unpin`.
# With MF_TEST_STORE_URL the server runs on PostgreSQL (integration_e2e_delivery_pg).
# Usage: e2e_delivery.sh BIN_DIR   (run by ctest as integration_e2e_delivery)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-e2e
agent() { "$BIN/mf-agent" --config "$work/$1.json" run --once >>"$work/$1.log" 2>&1; }
store_sql() { # store_sql SQL: straight into the server's store (the attacker below has it)
    if [ -n "${MF_TEST_STORE_URL:-}" ]; then
        psql -q -v ON_ERROR_STOP=1 "$MF_TEST_STORE_URL" -c "$1" >/dev/null
    else
        sqlite3 -cmd ".timeout 10000" "$work/server/store.db" "$1" # the server writes too
    fi
}
http_code() { # http_code TOKEN METHOD PATH [BODY]
    curl -s -o /dev/null -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
        ${4:+-H 'Content-Type: application/json' --data "$4"} "$MF_URL$3"
}

mf_stack_start "$work/server" "$work/server.log" || exit 1
check "director key written with mode 0600" test "$(stat -c %a "$work/server/director.key")" = 600
check "offline keys made, root and keys documents installed" mf_trust_setup "$work/keys"
check "server reports root v1, keys v1" bash -c "mfctl_admin() { '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' \"\$@\"; }; mfctl_admin trust status | grep -q 'root version 1, keys version 1'"

# --- the happy path -------------------------------------------------------------------------
mf_make_model "$work/v1.bin" 2097152 e2e-v1
mf_make_model "$work/v2.bin" 2097152 e2e-v2
check "publish v1 (signed release)" mf_publish detector v1 "$work/v1.bin"
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

# --- ids the server does not know (issue 17): exit 1 naming them, nothing written ------------
refused() { # refused MESSAGE MFCTL-ARGS...: mfctl exits 1 with MESSAGE on stderr
    local msg=$1
    shift
    mfctl_admin "$@" >"$work/refused.out" 2>"$work/refused.err"
    local rc=$?
    [ "$rc" -eq 1 ] && grep -qF -- "$msg" "$work/refused.err" ||
        { echo "    rc $rc: $(cat "$work/refused.err")"; return 1; }
}
check "pins set for an unknown device is refused" \
    refused "unknown device 'cam-9999'" pins set device cam-9999 detector v1
check "pins set for an unknown group is refused" \
    refused "unknown group 'nosuchgroup'" pins set group nosuchgroup detector v1
check "versions of an unknown model is refused" refused "unknown model 'nosuchmodel'" versions nosuchmodel
check "samples export of an unknown model is refused" \
    refused "unknown model 'fashoin'" samples export --model fashoin "$work/export-none"
check "  ... and wrote nothing" test ! -e "$work/export-none/samples.jsonl"
check "device groups for an unknown device is refused" \
    refused "unknown device 'cam-9999'" device groups cam-9999 lab
check "a fleet rollback of an unknown model is refused" \
    refused "unknown model 'fashoin'" rollback start fashoin v1
check "no pin was written" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' pins --json | grep -q '{\"pins\":\[\]}'"

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
check "mfctl publish with a wrong admin token fails" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$work/wrong-admin.token' publish detector v9 '$work/v2.bin' --release-key '$MF_RELEASE_KEY' 2>/dev/null"
check "  ... and publishes nothing" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' models | grep -q ' v9 '"

# --- a release signed by a key the keys document does not name ------------------------------
"$BIN/mfctl" keys gen "$work/evil.pem" >/dev/null
check "publish signed by an unknown key is refused" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' publish detector v9 '$work/v2.bin' --release-key '$work/evil.pem' 2>'$work/evil.err'"
check "  ... says the release was refused for its key" grep -q 'release refused.*unknown or revoked key' "$work/evil.err"
check "  ... and v9 stays staged, never assigned" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' models | grep -E ' v9 ' | grep -q staged"
check "  ... the device stays on v1" agent devA
check "mfctl publish without a release key is refused" bash -c "! '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' publish detector v8 '$work/v2.bin' 2>/dev/null"

# --- a blob whose bytes do not match its signed chunk hashes ---------------------------------
check "publish v2" mf_deploy detector v2 "$work/v2.bin"
v2sha=$(sha256sum "$work/v2.bin" | cut -c1-64)
blob="$work/server/blobs/${v2sha:0:2}/$v2sha"
check "v2 blob stored content-addressed" test -f "$blob"
cp "$blob" "$work/v2.saved"
printf '\xff' | dd of="$blob" bs=1 seek=1000000 conv=notrunc status=none
check "agent refuses the corrupted v2" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-bad.log' 2>&1"
check "  ... names the digest mismatch" grep -qi 'sha256' "$work/devA-bad.log"
check "  ... at the first bad chunk (chunk 0), aborting the download" grep -q 'chunk 0 .*does not match its signed sha256; download aborted' "$work/devA-bad.log"
active=$(mf_active_path "$work/devA" detector)
check "  ... keeps v1 active, bytes intact" cmp -s "$active" "$work/v1.bin"
check "  ... leaves no partial download" bash -c "! ls '$work/devA/models/detector/' | grep -q '\\.part'"
check "  ... and the server saw a failed report" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -Eq 'devA +.*detector +v1 +failed +- +v2: '"

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

# --- an attacker with the director key and the store, but no release key -------------------
# They sign a "release" of their own bytes with the stolen director key, drop the blob into
# the blob store and the row into the database. The real server then assigns it with a
# validly director-signed assignment; the device must refuse it: releases need the release
# role, which the director key is not part of.
mf_make_model "$work/evil.bin" 65536 evil
evilsha=$(sha256sum "$work/evil.bin" | cut -c1-64)
"$BIN/mfctl" keys sign-release "$work/evil-release.json" --name detector --release-version v666 \
    --sequence 1000 --file "$work/evil.bin" --sign "$work/server/director.key" >/dev/null
mkdir -p "$work/server/blobs/${evilsha:0:2}"
cp "$work/evil.bin" "$work/server/blobs/${evilsha:0:2}/$evilsha"
evil_digest=$(sed -n 's/.*"payload":"\([^"]*\)".*/\1/p' "$work/evil-release.json" | base64 -d | sha256sum | cut -c1-64)
evil_hex=$(od -An -v -tx1 "$work/evil-release.json" | tr -d ' \n')
evil_blob="X'$evil_hex'"
[ -n "${MF_TEST_STORE_URL:-}" ] && evil_blob="decode('$evil_hex', 'hex')"
# With the store they can mark it promoted too (the channel default), as a release a rollout
# finished would be.
check "attacker inserts an unreleased version with a forged release" store_sql \
    "INSERT INTO model_versions(model_id, version, sha256, size, created_at, sequence, security_floor, release_digest, release, promoted) SELECT id, 'v666', '$evilsha', 65536, 0, 1000, 0, '$evil_digest', $evil_blob, 1000 FROM models WHERE name = 'detector'"
check "the device refuses the director-signed assignment of it" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-evil.log' 2>&1"
check "  ... because no release key signed it" grep -q 'assignment refused.*unknown or revoked key' "$work/devA-evil.log"
check "  ... and never downloads it" bash -c "! grep -q 'installing v666' '$work/devA-evil.log'"
active=$(mf_active_path "$work/devA" detector)
check "  ... and keeps v2" cmp -s "$active" "$work/v2.bin"
store_sql "DELETE FROM model_versions WHERE version = 'v666'"

# --- a replayed check-in answer --------------------------------------------------------------
# A genuine, fully signed answer for devA (captured by anyone on the path), replayed to devA
# by a fake server that even rewrites the answer's unsigned "nonce" field to the one the
# device just sent: only the director-signed assignment still holds the old nonce.
cred=$(cat "$work/devA/credential")
curl -s -H "Authorization: Bearer $cred" -H 'Content-Type: application/json' \
    --data '{"nonce":"0123456789abcdef0123456789abcdef","root_version":1,"keys_version":1,"models":[{"name":"detector"}]}' \
    "$MF_URL/v1/checkin" >"$work/captured.json"
check "captured a signed check-in answer" grep -q '"assignment"' "$work/captured.json"
python3 - "$work/captured.json" "$work/replay.port" >"$work/replay.log" 2>&1 <<'PY' &
import http.server, json, sys
captured = json.load(open(sys.argv[1]))
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get('Content-Length', 0))) or b'{}')
        data = b''
        if self.path == '/v1/checkin':
            captured['nonce'] = req['nonce']
            data = json.dumps(captured).encode()
        self.send_response(200 if data else 204)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
s = http.server.HTTPServer(('127.0.0.1', 0), H)
open(sys.argv[2], 'w').write(str(s.server_port))
s.timeout = 30
for _ in range(4):
    s.handle_request()
PY
replay_pid=$!
for _ in $(seq 1 50); do [ -s "$work/replay.port" ] && break; sleep 0.1; done
sed "s#$MF_URL#http://127.0.0.1:$(cat "$work/replay.port")#" "$work/devA.json" >"$work/devA-replay.json"
check "the device refuses the replayed answer" bash -c "! '$BIN/mf-agent' --config '$work/devA-replay.json' run --once >'$work/devA-replay.log' 2>&1"
check "  ... for its old nonce" grep -q 'assignment refused.*wrong nonce' "$work/devA-replay.log"
active=$(mf_active_path "$work/devA" detector)
check "  ... and keeps v2" cmp -s "$active" "$work/v2.bin"
kill "$replay_pid" 2>/dev/null; wait "$replay_pid" 2>/dev/null

# --- security floor: an assigned release below the device's floor ----------------------------
mf_make_model "$work/v3.bin" 1048576 e2e-v3
mf_make_model "$work/v4.bin" 1048576 e2e-v4
check "publish v3 with security floor 5" mf_deploy detector v3 "$work/v3.bin" --security-floor 5
check "the device installs v3 and records floor 5" agent devA
check "  ... (status shows it)" bash -c "'$BIN/mf-agent' --config '$work/devA.json' status | grep -q 'floor 5'"
check "publish v4 with security floor 2 (newer sequence, lower floor)" mf_deploy detector v4 "$work/v4.bin" --security-floor 2
check "the device refuses v4 although it is assigned" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-floor.log' 2>&1"
check "  ... as below its security floor" grep -q 'below security floor' "$work/devA-floor.log"
active=$(mf_active_path "$work/devA" detector)
check "  ... and keeps v3" cmp -s "$active" "$work/v3.bin"
check "  ... and the server saw why" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -Eq 'devA +.*detector +v3 +failed +- +v4: .*below security floor'"

# --- a stolen director key freezes assignments only until the director key is rotated ------
# The attacker with the director key signs, for a genuine release, an assignment at sequence
# 2^53 (the largest a device reads). Here the real server signs it: the attacker raised the
# device's counter in the store; ops restore it afterwards, so the genuine director goes on
# from its own sequence and the device refuses that as a replay. Rotating the director key
# (keys v2 names a new one) gives the new key a fresh sequence space on the device.
mf_make_model "$work/v5.bin" 1048576 e2e-v5
mf_make_model "$work/v6.bin" 1048576 e2e-v6
check "attacker sets devA's director sequence to 2^53 - 1" store_sql \
    "UPDATE devices SET assign_seq = 9007199254740991 WHERE device_id = 'devA'"
check "publish v5 (floor 5)" mf_deploy detector v5 "$work/v5.bin" --security-floor 5
check "the device accepts the genuine v5 assigned at sequence 2^53" agent devA
check "  ... installs it" cmp -s "$(mf_active_path "$work/devA" detector)" "$work/v5.bin"
check "  ... and records sequence 2^53" bash -c "'$BIN/mf-agent' --config '$work/devA.json' status | grep -q 'sequence 9007199254740992'"
check "ops restore the store's sequence" store_sql "UPDATE devices SET assign_seq = 0 WHERE device_id = 'devA'"
check "publish v6 (floor 5)" mf_deploy detector v6 "$work/v6.bin" --security-floor 5
check "the frozen device refuses the genuine v6" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-frozen.log' 2>&1"
check "  ... as a replayed sequence" grep -q 'assignment refused.*replayed sequence' "$work/devA-frozen.log"
"$BIN/mfctl" keys gen "$work/director2.pem" >/dev/null
openssl pkey -in "$work/director2.pem" -pubout -out "$work/director2.pub.pem" 2>/dev/null
check "ops sign keys v2 naming a new director key" "$BIN/mfctl" keys sign-keys "$work/keys/keys2.json" \
    --release "$MF_RELEASE_KEY" --director "$work/director2.pub.pem" --version 2 --sign "$work/keys/keys.pem"
mf_stack_stop
rm -f "$work/server/director.key" "$work/server/director.pub.pem"
check "the server takes the new director key" "$BIN/mf-server" init --data-dir "$work/server" \
    --director-key "$work/director2.pem" ${MF_TEST_STORE_URL:+--store "$MF_TEST_STORE_URL"}
check "  ... and serves again" mf_stack_start "$work/server" "$work/server.log"
check "keys v2 installed on the server" mfctl_admin trust set-keys "$work/keys/keys2.json"
sed -i "s#\"server_url\": \"[^\"]*\"#\"server_url\": \"$MF_URL\"#" "$work/devA.json"
check "after the rotation the device installs v6" agent devA
check "  ... bytes are v6's" cmp -s "$(mf_active_path "$work/devA" detector)" "$work/v6.bin"
check "  ... on keys v2, sequence space of the new key" bash -c "'$BIN/mf-agent' --config '$work/devA.json' status | grep -q 'keys v2' && ! '$BIN/mf-agent' --config '$work/devA.json' status | grep -q 'sequence 9007199254740992'"

# --- chunk tree (issue 19): a release naming its chunks by their Merkle root alone ----------
mf_make_model "$work/v7.bin" 3145728 e2e-v7
check "publish v7 as a chunk tree (the release lists no chunk hashes)" bash -c \
    "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' publish detector v7 '$work/v7.bin' --release-key '$MF_RELEASE_KEY' --security-floor 5 --chunk-size 1048576 --chunk-tree | grep -q 'chunk tree: root only' && '$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' promote detector v7 --force >/dev/null"
# The chunk list travels as a blob of its own: three SHA-256s, content-addressed.
list_sha=$(python3 -c 'import hashlib, sys
d = open(sys.argv[1], "rb").read()
print(hashlib.sha256(b"".join(hashlib.sha256(d[i:i + 1048576]).digest() for i in range(0, len(d), 1048576))).hexdigest())' "$work/v7.bin")
check "the server stored v7's chunk list as a blob of its own" test -f "$work/server/blobs/${list_sha:0:2}/$list_sha"
check "  ... which a device may fetch: 96 bytes, three hashes" \
    test "$(curl -s -H "Authorization: Bearer $cred" "$MF_URL/v1/blobs/$list_sha" | wc -c)" = 96
v7sha=$(sha256sum "$work/v7.bin" | cut -c1-64)
v7blob="$work/server/blobs/${v7sha:0:2}/$v7sha"
cp "$v7blob" "$work/v7.saved"
printf '\xff' | dd of="$v7blob" bs=1 seek=1500000 conv=notrunc status=none
check "agent refuses the chunk-tree v7 with a corrupted chunk" bash -c "! '$BIN/mf-agent' --config '$work/devA.json' run --once >'$work/devA-tree.log' 2>&1"
check "  ... at its bad chunk (chunk 1), checked against the fetched list" grep -q 'chunk 1 .*does not match its signed sha256; download aborted' "$work/devA-tree.log"
check "  ... keeps v6 active" cmp -s "$(mf_active_path "$work/devA" detector)" "$work/v6.bin"
cp "$work/v7.saved" "$v7blob"
check "the device installs the chunk-tree v7" agent devA
check "  ... bytes are v7's" cmp -s "$(mf_active_path "$work/devA" detector)" "$work/v7.bin"

# --- delta, rollback and pin on a second device (issue 5) -----------------------------------
agentB() { "$BIN/mf-agent" --config "$work/devB.json" "$@" >>"$work/devB.log" 2>&1; }
mf_make_model "$work/c1.bin" 4194304 e2e-c1
cp "$work/c1.bin" "$work/c2.bin"
head -c 65536 /dev/urandom | dd of="$work/c2.bin" bs=65536 seek=7 conv=notrunc status=none
mf_make_model "$work/c3.bin" 1048576 e2e-c3
mkdir -p "$work/devB"
mf_agent_config "$work/devB.json" devB "$work/devB" "$MF_ENROLL_TOKEN_FILE" classifier
check "publish classifier c1" mf_publish classifier c1 "$work/c1.bin"
check "devB installs c1" agentB run --once
deltas=$(mf_metric mf_deltas_computed_total)
check "publish classifier c2 (a 64 KiB change)" mf_deploy classifier c2 "$work/c2.bin"
# Bounded wait (400 s: a sanitizer build on a loaded machine encodes slowly) until c2's
# delta job is done: every job finished (under load an earlier model's job can finish
# first) and a delta was stored.
mf_wait_jobs 400 || echo "delta jobs still busy after 400 s"
check "  ... its delta was precomputed" test "$(mf_metric mf_deltas_computed_total)" -gt "${deltas:-0}"
check "devB updates to c2" agentB run --once
check "  ... from a delta, not the 4 MiB blob" grep -q 'c2 built from a [0-9]*-byte delta' "$work/devB.log"
check "  ... and the bytes are c2's" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c2.bin"
check "mf-agent rollback classifier" agentB rollback classifier
check "  ... c1 is active again" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c1.bin"
check "  ... status says why" bash -c "'$BIN/mf-agent' --config '$work/devB.json' status | grep -q 'rolled back: 1 version(s), last: manual rollback'"
check "a run after the rollback keeps c1 (no loop)" agentB run --once
check "  ... c1 still active" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c1.bin"
check "  ... the server saw the rollback" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -E 'devB +.*classifier' | grep -q 'rolled back'"
check "  ... mfctl devices: devB runs c1, rolled back from c2" bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -Eq 'devB +[^ ]+ +classifier +c1 +rolled back +c2 +manual rollback'"
check "mf-agent pin classifier (to c1)" agentB pin classifier
check "publish classifier c3" mf_deploy classifier c3 "$work/c3.bin"
check "a pinned device stays on c1" agentB run --once
check "  ... c1 still active" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c1.bin"
check "  ... status shows the pin" bash -c "'$BIN/mf-agent' --config '$work/devB.json' status | grep -q 'pinned: c1'"
check "mf-agent unpin classifier" agentB unpin classifier
check "unpinned, it updates to c3" agentB run --once
check "  ... c3 active" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c3.bin"
check "mf-agent rejects a command without a model" bash -c "'$BIN/mf-agent' --config '$work/devB.json' pin; test \$? -eq 2"
mf_make_model "$work/c4.bin" 1048576 e2e-c4
check "publish classifier c4" mf_deploy classifier c4 "$work/c4.bin"
check "check-now without a daemon runs one step" agentB check-now
check "  ... c4 active" cmp -s "$(mf_active_path "$work/devB" classifier)" "$work/c4.bin"
sed -i 's/"log_level": "info"/"log_level": "info", "confirm": "manual"/' "$work/devB.json"
mf_make_model "$work/c5.bin" 1048576 e2e-c5
check "publish classifier c5" mf_deploy classifier c5 "$work/c5.bin"
check "with confirm manual, c5 installs pending" agentB run --once
check "  ... status shows PENDING" bash -c "'$BIN/mf-agent' --config '$work/devB.json' status | grep -q 'c5 .*PENDING'"
check "mf-agent confirm classifier" agentB confirm classifier
check "  ... no longer pending" bash -c "! '$BIN/mf-agent' --config '$work/devB.json' status | grep -q PENDING"

echo "$MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    for f in "$work"/*.log; do echo "--- $f"; tail -5 "$f"; done
    exit 1
fi
