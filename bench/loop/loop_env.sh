# SPDX-License-Identifier: Apache-2.0
# Sourced by the bench/loop scripts after `set -uo pipefail`: the tree's root, the stack
# helpers (scripts/lib/stack.sh), the Fashion-MNIST files, Debian's Python with torch
# (exits 2 without it: scripts/install-deps --torch) and the example's PyTorch programs.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
FM=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3
TORCH=$root/examples/mnist/torch
"$PY" -c 'import torch' || { echo "python3-torch is not installed (scripts/install-deps --torch)"; exit 2; }

# loop_serve MODELS DISTILL: the members of the offload and distillation configs' "models"
# objects; writes both into $work and starts mf-server on them, with trust documents.
loop_serve() {
    echo "{\"models\": {$1}}" >"$work/offload.json"
    echo "{\"models\": {$2}}" >"$work/distill.json"
    MF_SERVE_ARGS="--offload-config $work/offload.json --distill-config $work/distill.json --device-rate 100000"
    export MF_SERVE_ARGS
    mf_stack_start "$work/server" "$work/server.log" || return 1
    mf_trust_setup "$work/keys" >/dev/null
}
