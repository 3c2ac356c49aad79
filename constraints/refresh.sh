#!/usr/bin/env bash
# Re-resolve the test and docs extras in a new venv and rewrite constraints/test.txt from it.
# Run the suite with the new file (README's test command) and commit it only if it passes.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
pip install torch==2.14.1 torchvision==0.29.1
pip install -e ".[test,docs]"
python_version=$(python -c 'import platform; print(platform.python_version(), platform.machine())')
{
  echo "# Exact versions of every package the \`test\` and \`docs\` extras resolve to, from a resolve whose test suite passed."
  echo "# Resolved on Python $python_version (Linux) into a new venv, after README's torch line."
  echo "# vlmjudge itself is not listed: pip refuses a constraint on the project it installs in editable mode."
  echo "# Refresh: bash constraints/refresh.sh, then run README's test command before committing."
  pip freeze --exclude-editable | grep -v '^vlmjudge'
} > constraints/test.txt
echo "wrote constraints/test.txt ($(grep -vc '^#' constraints/test.txt) packages) from $venv"
