#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what bench/server/run.sh needs on top of scripts/install-deps: wrk (the load
# generator) and nginx (the peer it is compared with). Benchmark-only: not a test dependency.
set -euo pipefail

pkgs=(wrk nginx-light)
missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
# The Debian nginx package starts a system nginx on port 80; the benchmark runs its own
# instance on a private port, so keep services from starting during the install (policy-rc.d
# exit 101 = "action forbidden"), unless the machine already has a policy of its own.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    "${sudo_cmd[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    own_policy=1
fi
status=0
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
if [ "$own_policy" = 1 ]; then
    "${sudo_cmd[@]}" rm -f "$policy"
fi
exit "$status"
