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
