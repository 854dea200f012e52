#!/usr/bin/env bash
# Tears the test node down (also after a failed up) and checks that the machine is as it was
# before up; exits non-zero if anything is left. Arguments go to node.py down (--keep-logs DIR).
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/node.py" down "$@"
