# Sourced by the record-tiny*.sh and record-deep-gqa-c8.sh scripts: `record_surface NAME
# [OUT.json] [extra flags] -- AXES/STOCK FLAGS` records bench/search/surface-NAME.json (or
# OUT) from bench/search/surface-NAME.spec.yaml ($SPEC overrides) with `hone search
# record` ($HONE overrides the binary), every point once and half of them again
# ($REPEATS passes over every point, default 1; $REPEAT_FRACTION overrides the half;
# a run with more passes continues a recorded file), at raised priority when run as root (nice -n
# $NICE, default -10). Runs from the repository root.
record_surface() {
  local name=$1
  shift
  local user=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    user+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift  # the --
  local out=bench/search/surface-$name.json
  if [ ${#user[@]} -gt 0 ]; then
    out=${user[0]}
    user=("${user[@]:1}")
  fi
  local hone=${HONE:-build/src/cli/hone}
  local nice=()
  [ "$(id -u)" = 0 ] && nice=(nice -n "${NICE:--10}")
  "${nice[@]}" "$hone" search record --spec "${SPEC:-bench/search/surface-$name.spec.yaml}" --out "$out" \
    "$@" --repeats "${REPEATS:-1}" --repeat-fraction "${REPEAT_FRACTION:-0.5}" "${user[@]}"
}
