#!/usr/bin/env bash
# Installs cipherd (the service, and its client from client/) into a virtual environment. One
# script for developers, CI and the Docker image.
#
#   scripts/install.sh            runtime install (what the Docker image runs)
#   scripts/install.sh --dev      editable install with the test dependencies, the npm peers and
#                                 (as root, with apt) Debian's chromium for the /docs test and
#                                 zsh and fish for the completion tests
#
# The client alone needs no script: `pip install ./client`.
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
    # Debian packages the tests use, in one apt-get run that waits for another's lock: SoftHSM2
    # (the PKCS#11 tests), chromium (the console's browser tests), zsh and fish (the completion
    # tests run the command's scripts in them as well as bash).
    debian=()
    command -v softhsm2-util >/dev/null || debian+=(softhsm2)
    [ -x /usr/bin/chromium ] || debian+=(chromium)
    command -v zsh >/dev/null || debian+=(zsh)
    command -v fish >/dev/null || debian+=(fish)
    if [ ${#debian[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get -o DPkg::Lock::Timeout=600 update -qq
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
                --no-install-recommends "${debian[@]}"
        else
            echo "install ${debian[*]} (apt-get install) for the tests that use them" >&2
        fi
    fi
    "${pip[@]}" install ${locked[@]+"${locked[@]}"} -e "$root/client" -e "$root[test]"
    if [ -f "$root/tests/interop/package.json" ]; then
        (cd "$root/tests/interop" && npm ci --silent --no-audit --no-fund)
    fi
else
    "${pip[@]}" install ${locked[@]+"${locked[@]}"} "$root/client" "$root"
fi
# An environment made before the client had its own distribution: pip removed the `cipherd`
# command with the old distribution that owned it, after the client had written it.
if [ ! -e "$venv/bin/cipherd" ]; then
    client=("$root/client")
    [ "$mode" != "--dev" ] || client=(-e "$root/client")
    "${pip[@]}" install --no-deps --force-reinstall "${client[@]}"
fi
