#!/usr/bin/env bash
# Fails when git tracks a built binary or a file over 1 MiB. A built program
# in git (a 117 MiB `demo` once) bloats every clone for ever; generated files
# that are legitimately large are excepted by name below, nothing else.
#
# Usage: hack/check-tracked-files.sh [repository]   (default: this clone)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

MAX_BYTES=$((1024 * 1024))
# Generated and committed on purpose (make generate); may grow past 1 MiB.
allowed_large() {
  case "$1" in
    upstream-crds/*.yaml|pkg/apis/*/crds/*/*.yaml|charts/*/seed-crds/*.yaml) return 0 ;;
    example/controller-registration.yaml|example/extension.yaml) return 0 ;;
  esac
  return 1
}

# The first bytes of executables: ELF, PE (MZ), Mach-O (32/64 bit, both
# byte orders, universal) and WebAssembly.
is_binary_executable() {
  local magic
  magic="$(head -c 4 -- "$1" | od -An -tx1 | tr -d ' \n')"
  case "$magic" in
    7f454c46|4d5a*|feedface|feedfacf|cefaedfe|cffaedfe|cafebabe|0061736d) return 0 ;;
  esac
  return 1
}

bad=0
while IFS= read -r -d '' entry; do
  mode="${entry%% *}"
  path="${entry#*$'\t'}"
  [ -f "$path" ] || continue # deleted in the work tree, not yet committed
  size="$(stat -c %s -- "$path")"
  if (( size > MAX_BYTES )) && ! allowed_large "$path"; then
    echo "check-tracked-files: $path is $size bytes, over the 1 MiB limit (built output or data does not belong in git)" >&2
    bad=1
  fi
  if is_binary_executable "$path"; then
    echo "check-tracked-files: $path is an executable binary; remove it (git rm --cached $path) and ignore it in .gitignore" >&2
    bad=1
  elif [ "$mode" = 100755 ] && [ "$(head -c 2 -- "$path")" != '#!' ]; then
    echo "check-tracked-files: $path is marked executable but is no script (no #! line)" >&2
    bad=1
  fi
done < <(git ls-files -s -z)

if (( bad )); then exit 1; fi
echo "check-tracked-files: no binaries, nothing over 1 MiB"
