# SPDX-License-Identifier: Apache-2.0
# Shell helpers shared by scripts/demo and the integration tests: start mf-server on an
# ephemeral loopback port, wait for it (bounded), write agent configs, stop everything on exit.
# Source it with BIN set to the directory holding mf-server, mfctl and mf-agent.

MF_SERVER_PID=""
MF_PASSED=0
MF_FAILED=0

# mf_check "what" COMMAND...: one step of an integration test: runs COMMAND, prints ok/FAIL
# and counts it in MF_PASSED / MF_FAILED for the test's summary.
mf_check() {
    local what=$1
    shift
    if "$@"; then
        MF_PASSED=$((MF_PASSED + 1))
        echo "ok   - $what"
    else
        MF_FAILED=$((MF_FAILED + 1))
        echo "FAIL - $what"
    fi
}

# mf_stack_scratch PREFIX: the test's scratch directory /tmp/PREFIX.XXXXXX in $work, removed
# (with the stack stopped) on exit; check is mf_check. One prologue for the integration tests.
mf_stack_scratch() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    trap 'mf_stack_stop; rm -rf "$work"' EXIT
}
check() { mf_check "$@"; }

# mf_fashion_data BEGIN END SEED_FRACTION CALIBRATION: the "data" object of a distill config
# on Debian's Fashion-MNIST (docs/distill.md): held-out test items [BEGIN, END).
mf_fashion_data() {
    local fm=/usr/share/datasets/fashion-mnist
    cat <<JSON
{"train_images": "$fm/train-images-idx3-ubyte.gz", "train_labels": "$fm/train-labels-idx1-ubyte.gz",
 "heldout_images": "$fm/t10k-images-idx3-ubyte.gz", "heldout_labels": "$fm/t10k-labels-idx1-ubyte.gz",
 "heldout_range": [$1, $2], "seed_fraction": $3, "calibration": $4}
JSON
}

# mf_skip WHY: a part that cannot run on this machine says so; with MF_TEST_NO_SKIP set (CI)
# it fails instead, since there every dependency is installed and a skip would hide a gap.
mf_skip() {
    if [ -n "${MF_TEST_NO_SKIP:-}" ]; then
        MF_FAILED=$((MF_FAILED + 1))
        echo "FAIL - cannot run here: $1 (MF_TEST_NO_SKIP is set)"
        return 1
    fi
    echo "skip - $1"
}

# mf_stack_start DATA_DIR LOG_FILE: init the data dir and serve it on 127.0.0.1:<ephemeral>.
# Sets MF_URL and MF_ADMIN_TOKEN_FILE, MF_ENROLL_TOKEN_FILE. With MF_TEST_STORE_URL set
# (tests/pg/with_db.sh) init and serve run on that PostgreSQL store;
# MF_SERVE_ARGS adds serve options (word-split: bench/server/run.sh's --threads, limits).
mf_stack_start() {
    local data=$1 log=$2
    "$BIN/mf-server" init --data-dir "$data" ${MF_TEST_STORE_URL:+--store "$MF_TEST_STORE_URL"} \
        >>"$log" 2>&1 || return 1
    rm -f "$data/port"
    "$BIN/mf-server" serve --data-dir "$data" --listen 127.0.0.1:0 --port-file "$data/port" \
        ${MF_TEST_STORE_URL:+--store "$MF_TEST_STORE_URL"} ${MF_SERVE_ARGS:-} >>"$log" 2>&1 &
    MF_SERVER_PID=$!
    # Bounded wait: 100 x 0.1 s for the port file the server writes once it listens.
    for _ in $(seq 1 100); do
        [ -s "$data/port" ] && break
        if ! kill -0 "$MF_SERVER_PID" 2>/dev/null; then
            echo "mf-server exited during start-up; log:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    if [ ! -s "$data/port" ]; then
        echo "mf-server did not listen within 10 s" >&2
        return 1
    fi
    MF_URL="http://127.0.0.1:$(cat "$data/port")"
    MF_ADMIN_TOKEN_FILE=$data/admin.token
    MF_ENROLL_TOKEN_FILE=$data/enroll.token
    MF_DATA_DIR=$data
    export MF_URL MF_ADMIN_TOKEN_FILE MF_ENROLL_TOKEN_FILE MF_DATA_DIR
}

mf_stack_stop() {
    if [ -n "$MF_SERVER_PID" ] && kill -0 "$MF_SERVER_PID" 2>/dev/null; then
        kill -TERM "$MF_SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$MF_SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$MF_SERVER_PID" 2>/dev/null || true
        wait "$MF_SERVER_PID" 2>/dev/null || true
    fi
    MF_SERVER_PID=""
}

# mfctl_admin ARGS...: mfctl against the running stack with the admin token.
mfctl_admin() {
    "$BIN/mfctl" --server "$MF_URL" --token-file "$MF_ADMIN_TOKEN_FILE" "$@"
}

# mf_trust_setup KEY_DIR: the offline side of the trust chain (docs/operations.md, "Keys and
# trust"): generates a root key, a keys-document key and a release key in KEY_DIR (mode 0600),
# signs root v1 and keys v1 (release role: the release key; director role: the running
# server's director.pub.pem) and installs both on the server. Sets MF_ROOT_FILE (what devices
# are provisioned with) and MF_RELEASE_KEY.
mf_trust_setup() {
    local keys=$1
    mkdir -p "$keys"
    # Each line of KEY_DIR/keyids: "<key id> <file>".
    "$BIN/mfctl" keys gen "$keys/root.pem" >"$keys/keyids" &&
        "$BIN/mfctl" keys gen "$keys/keys.pem" >>"$keys/keyids" &&
        "$BIN/mfctl" keys gen "$keys/release.pem" >>"$keys/keyids" &&
        "$BIN/mfctl" keys root-init "$keys/root.json" --root "$keys/root.pem" \
            --keys "$keys/keys.pem" >/dev/null &&
        "$BIN/mfctl" keys sign-keys "$keys/keys.json" --release "$keys/release.pem" \
            --director "$MF_DATA_DIR/director.pub.pem" --sign "$keys/keys.pem" >/dev/null &&
        mfctl_admin trust set-root "$keys/root.json" >/dev/null &&
        mfctl_admin trust set-keys "$keys/keys.json" >/dev/null || return 1
    MF_ROOT_FILE=$keys/root.json
    MF_RELEASE_KEY=$keys/release.pem
    export MF_ROOT_FILE MF_RELEASE_KEY
}

# mf_publish NAME VERSION FILE [OPTIONS...]: signed publish with the release key.
mf_publish() {
    mfctl_admin publish "$@" --release-key "$MF_RELEASE_KEY"
}

# mf_deploy NAME VERSION FILE [OPTIONS...]: publish, then promote by hand (`mfctl promote
# --force`): the channel default from the next check-in, with no canary. Published alone is
# not deployed (docs/rollouts.md, "Release lifecycle"); scripts that test delivery rather
# than rollouts deploy with this.
mf_deploy() {
    mf_publish "$@" && mfctl_admin promote "$1" "$2" --force
}

# mf_put_variant MODEL VERSION VARIANT FILE QUERY: uploads VARIANT of MODEL VERSION (admin
# token; QUERY such as 'rank=9&fallback=1', docs/rollouts.md); prints the status code, the
# answer in $work/put.out.
mf_put_variant() {
    curl -s -o "$work/put.out" -w '%{http_code}' -X PUT --data-binary "@$4" \
        -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" \
        -H "X-MF-Sha256: $(sha256sum "$4" | cut -d' ' -f1)" \
        "$MF_URL/v1/admin/models/$1/versions/$2/variants/$3?$5"
}

# mf_release_variant MODEL VERSION VARIANT FILE SEQUENCE: signs the variant's own release (the
# version's name and SEQUENCE, FILE's bytes) offline with the release key and attaches it;
# prints the status code.
mf_release_variant() {
    "$BIN/mfctl" keys sign-release "$work/$3.release" --name "$1" --release-version "$2" \
        --sequence "$5" --file "$4" --sign "$MF_RELEASE_KEY" >/dev/null || return 1
    curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary "@$work/$3.release" \
        -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" \
        "$MF_URL/v1/admin/models/$1/versions/$2/variants/$3/release"
}

# mf_agent_config FILE DEVICE_ID STATE_DIR ENROLL_TOKEN_FILE MODEL...: write an agent config
# (provisioned with MF_ROOT_FILE).
mf_agent_config() {
    local file=$1 dev=$2 state=$3 token=$4
    shift 4
    local models="" m
    for m in "$@"; do
        models="$models${models:+, }\"$m\""
    done
    cat >"$file" <<JSON
{
  "server_url": "$MF_URL",
  "device_id": "$dev",
  "enrollment_token_file": "$token",
  "state_dir": "$state",
  "models": [$models],
  "trust_root_file": "$MF_ROOT_FILE",
  "poll_interval_s": 1,
  "log_level": "info"
}
JSON
}

# mf_make_model FILE BYTES SEED: deterministic pseudo-random bytes standing in for weights.
mf_make_model() {
    local file=$1 bytes=$2 seed=$3
    # openssl dies of SIGPIPE when head has enough; that is the expected end, not a failure.
    { openssl enc -aes-128-ctr -nosalt -pass "pass:modelferry-$seed" -pbkdf2 -in /dev/zero \
        2>/dev/null || true; } | head -c "$bytes" >"$file"
    [ "$(stat -c %s "$file")" -eq "$bytes" ]
}

# mf_active_path STATE_DIR MODEL: path of the model's active slot file ("" when none), read
# from the agent's state file models/<MODEL>/state.json.
mf_active_path() {
    local state=$1 model=$2 slot
    slot=$(sed -n 's/.*"active":{"slot":"\([ab]\)".*/\1/p' "$state/models/$model/state.json" \
        2>/dev/null || true)
    [ -n "$slot" ] && echo "$state/models/$model/slot-$slot"
    return 0
}

# mf_metric NAME: the value of one sample of the running server's /metrics (admin token).
mf_metric() {
    curl -s -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" "$MF_URL/metrics" |
        sed -n "s/^$1 \([0-9]*\)\$/\1/p"
}

# mf_offload_config DIR MODEL PROBS THRESHOLD: writes DIR/offload.json (for `serve
# --offload-config`) giving MODEL a sync-ask policy below THRESHOLD and a command teacher,
# DIR/teacher.sh, that answers every sample with the probabilities PROBS (a JSON array) as
# teacher version cmd-1.
mf_offload_config() {
    local dir=$1 model=$2 probs=$3 threshold=$4
    # One process per call: the sample JSON on stdin, the answer on stdout.
    printf 'cat >/dev/null\necho %s\n' "'{\"probs\": $probs, \"version\": \"cmd-1\"}'" \
        >"$dir/teacher.sh"
    cat >"$dir/offload.json" <<JSON
{"models": {"$model": {
  "teacher": {"connector": "command", "command": ["/bin/sh", "$dir/teacher.sh"],
              "timeout_ms": 5000},
  "policy": {"enabled": true, "method": "max_softmax", "mode": "sync", "threshold": $threshold,
             "deadline_ms": 5000, "metered": "allow"}}}}
JSON
}

# mf_wait_jobs SECONDS: bounded wait until the server's background jobs (delta precompute,
# labelling) are all done; returns non-zero if they are not done in time.
mf_wait_jobs() {
    # A wall-clock deadline: under load each poll takes far longer than its 0.1 s sleep.
    local deadline=$((SECONDS + $1))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if [ "$(mf_metric 'mf_jobs{state="queued"}')" = 0 ] &&
            [ "$(mf_metric 'mf_jobs{state="running"}')" = 0 ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}
