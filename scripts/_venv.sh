# Sourced by scripts/test and scripts/simulate: make sure .venv exists and holds this checkout, with the
# versions pinned in requirements-dev.lock (scripts/lock writes it from pyproject.toml).
# The install is redone only when pyproject.toml or the lock changed since the last one (a stamp file), so
# repeated runs cost nothing and work offline.

UV_VERSION=0.13.9

find_python() {
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "scripts: Python 3.11 or newer is required (none of python3.11..3.13 or python3 qualifies)" >&2
    return 1
}

ensure_venv() {
    if [ ! -x .venv/bin/python ]; then
        local python
        python=$(find_python)
        echo "== creating .venv with $python"
        "$python" -m venv .venv
    fi
    local stamp=.venv/.tally-installed
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements-dev.lock -nt "$stamp" ]; then
        echo "== installing tally and its test tools into .venv (the versions of requirements-dev.lock)"
        # uv installs the locked set in seconds where pip takes minutes; the lock makes two installs equal.
        .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" &&
            .venv/bin/uv pip install --quiet --python .venv/bin/python -r requirements-dev.lock &&
            .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e . || {
            echo "scripts: installing requirements-dev.lock into .venv failed" >&2
            return 1
        }
        touch "$stamp"
    fi
}
