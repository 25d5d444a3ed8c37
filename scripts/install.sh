#!/usr/bin/env bash
# Installs cipherd into a virtual environment. One script for developers, CI and the Docker image.
#
#   scripts/install.sh            runtime install (what the Docker image runs)
#   scripts/install.sh --dev      editable install with the test dependencies, the npm peers and
#                                 (as root, with apt) Debian's chromium for the /docs test
#
# CIPHERD_VENV chooses the environment (default: .venv in the repository), PYTHON the interpreter.
# Versions come from constraints.txt, the set the tests last passed with (`make lock` renews it);
# CIPHERD_CONSTRAINTS= (empty) installs the newest releases pyproject.toml allows instead.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CIPHERD_VENV:-$root/.venv}
python=${PYTHON:-python3}
mode=${1:-}
constraints=${CIPHERD_CONSTRAINTS-$root/constraints.txt}

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install --upgrade pip setuptools wheel
locked=()
[ -z "$constraints" ] || locked=(-c "$constraints")

# petrelic publishes only a cp310 wheel, but its extension is built for the stable ABI
# (_petrelic.abi3.so) and runs on 3.10+. Retag the wheel as cp310-abi3 so pip accepts it.
if ! "$venv/bin/python" -c 'import petrelic' 2>/dev/null; then
    wheels=$(mktemp -d)
    "${pip[@]}" download --no-deps --only-binary=:all: --python-version 3.10 \
        --platform manylinux2014_x86_64 petrelic==0.1.5 -d "$wheels"
    for wheel in "$wheels"/petrelic-*-cp310-cp310-*.whl; do
        mv "$wheel" "${wheel/cp310-cp310/cp310-abi3}"
    done
    "${pip[@]}" install "$wheels"/petrelic-*.whl
    rm -rf "$wheels"
fi

if [ "$mode" = "--dev" ]; then
    # The PKCS#11 tests run against SoftHSM2 (Debian's softhsm2), installed here when we can.
    if ! command -v softhsm2-util >/dev/null && command -v apt-get >/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq softhsm2
        else
            echo "install softhsm2 (apt-get install softhsm2) for the PKCS#11 tests" >&2
        fi
    fi
    "${pip[@]}" install ${locked[@]+"${locked[@]}"} -e "$root[test]"
    if [ -f "$root/tests/interop/package.json" ]; then
        (cd "$root/tests/interop" && npm ci --silent --no-audit --no-fund)
    fi
    if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium
    fi
else
    "${pip[@]}" install ${locked[@]+"${locked[@]}"} "$root"
fi
