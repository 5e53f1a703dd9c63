# Shared by the vllm and python stand-ins (tests only; see README.md beside them).
#
# standin_serve HELP MODEL ARGS...: every --flag of ARGS must appear in the engine's
# recorded --help text HELP, else it fails the way argparse fails ("PROG: error:
# unrecognized arguments: FLAG", exit 2). HONE_STANDIN_FAIL names a recorded failure
# log (testdata/failures/<file>) to print instead of serving, exit 1, the way the
# engine fails at startup (out of memory, CUDA graph capture, ...). Otherwise it execs
# $HONE_STANDIN_LLAMA_SERVER on the given host and port with the equivalent arguments
# it knows (max-num-seqs/max-running-requests -> --parallel, max-model-len/
# context-length -> --ctx-size), so /health and the completions endpoints answer.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testdata="$(dirname "$here")"

standin_serve() {
  local prog="$1" help="$testdata/$2" model="$3"
  shift 3
  if [ -n "${HONE_STANDIN_FAIL:-}" ]; then
    cat "$testdata/failures/$HONE_STANDIN_FAIL" >&2
    exit 1
  fi
  local host=127.0.0.1 port=8000
  local extra=()
  while [ $# -gt 0 ]; do
    local a="$1"
    shift
    local value=""
    if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
      value="$1"
      shift
    fi
    case "$a" in
      --*)
        local flag="${a%%=*}"
        if ! grep -qE -- "(^|[[:space:],\[])${flag}([][[:space:],=]|$)" "$help"; then
          echo "usage: $prog [options]" >&2
          echo "$prog: error: unrecognized arguments: $a $value" >&2
          exit 2
        fi
        ;;
      *)
        echo "$prog: error: unrecognized arguments: $a" >&2
        exit 2
        ;;
    esac
    case "$flag" in
      --host) host="$value" ;;
      --port) port="$value" ;;
      --max-num-seqs | --max-running-requests) extra+=(--parallel "$value") ;;
      --max-model-len | --context-length) extra+=(--ctx-size "$value") ;;
    esac
  done
  echo "INFO stand-in for $prog: serving $model on $host:$port through llama-server" >&2
  exec "${HONE_STANDIN_LLAMA_SERVER:?the stand-in needs HONE_STANDIN_LLAMA_SERVER}" -m "$model" --host "$host" \
    --port "$port" --metrics "${extra[@]}"
}
