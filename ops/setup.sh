#!/usr/bin/env bash
# ops/setup.sh: the README's two commands.
#   ops/setup.sh run  [objlogd flags]  install what is missing, build, start
#                                      a single-node Kafka whose log lives in
#                                      $OBJLOG_HOME/kafka and objlogd on it
#                                      (view in $OBJLOG_HOME/view); with
#                                      --embedded, objlogd alone on the
#                                      in-memory mock cluster instead
#   ops/setup.sh test                  install what is missing, build plain and
#                                      ASan+UBSan trees, run every test in both
#   ops/setup.sh build                 install what is missing and build
#   ops/setup.sh compare [flags]       install what is missing (wrk, PostgreSQL
#                                      15, ...), build, fetch the Kafka jars and
#                                      run ops/compare/compare.sh [flags]
# Everything the project needs on a fresh Debian 12 machine is listed here.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

packages=(
  build-essential cmake pkg-config
  librdkafka-dev librocksdb-dev libprotobuf-c-dev protobuf-c-compiler
  libcurl4-openssl-dev libcmocka-dev libevent-dev libjansson-dev libssl-dev
  libexpat1-dev zlib1g-dev
  kcat protobuf-compiler openssl curl
  openjdk-17-jre-headless maven
  python3-boto3 awscli rclone s3cmd chromium
)
# Only `compare` needs these (the tests do not run the comparison).
compare_packages=(wrk postgresql-15 postgresql-client-15 curl valgrind)

install_missing() { # extra packages...
  local missing=()
  for p in "${packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # A fresh postgresql-15 creates and starts a "main" cluster on
  # localhost:5432; the comparison makes throw-away clusters of its own.
  if [[ " ${missing[*]} " == *" postgresql-15 "* ]] && [ -d /etc/postgresql/15/main ]; then
    $sudo pg_dropcluster --stop 15 main || true
  fi
}

# promtool validates /metrics in the tests. It ships only inside Debian's
# `prometheus` package, whose install would also start a Prometheus server
# listening on every interface; so take just the binary out of the .deb.
fetch_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    export PROMTOOL=${PROMTOOL:-$(command -v promtool)}
    return 0
  fi
  local dir="$root/build-tools"
  if [ ! -x "$dir/prometheus/usr/bin/promtool" ]; then
    echo "setup: fetching promtool from Debian's prometheus package" >&2
    mkdir -p "$dir"
    (cd "$dir" && rm -f prometheus_*.deb && apt-get download prometheus >/dev/null) || {
      local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
      $sudo apt-get update -qq && (cd "$dir" && apt-get download prometheus >/dev/null)
    }
    dpkg-deb -x "$dir"/prometheus_*.deb "$dir/prometheus"
  fi
  export PROMTOOL="$dir/prometheus/usr/bin/promtool"
}

build_tree() { # dir, extra cmake args (a later -DCMAKE_BUILD_TYPE wins)...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

build_targets() { # dir, targets...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j"$jobs" --target "$@"
}

run_tests() { # dir, label
  echo "== tests: $2 ==" >&2
  ctest --test-dir "$1" --output-on-failure --timeout 600 -j"$jobs"
}

# The durable default: a real single-node Kafka (ops/kafka.sh) keeps the log
# under $OBJLOG_HOME/kafka, objlogd keeps its view in $OBJLOG_HOME/view. Both
# survive a restart; Kafka stops when objlogd does, however that happens.
# The S3 endpoint is on in the run command (127.0.0.1:9000, unsigned
# requests accepted: loopback only) unless the flags or the environment
# choose one, and keeps object bytes in $OBJLOG_HOME/blobs unless they say
# where bytes go (--blob-dir, --s3-blob-url); the blob-release records go to
# objlog.blob-releases, from which that directory deletes what nothing
# references any more.
s3_flags() { # blob-dir objlogd flags...
  local a blobs=$1 listen=1 bytes=1 releases=1
  shift
  for a in "$@"; do
    case "$a" in
      --s3-listen|--s3-listen=*) listen=0 ;;
      --blob-dir|--blob-dir=*|--s3-blob-url|--s3-blob-url=*) bytes=0 ;;
      --blob-release-topic|--blob-release-topic=*) releases=0 ;;
    esac
  done
  [ -n "${OBJLOG_S3_LISTEN:-}" ] && listen=0
  [ -n "${OBJLOG_BLOB_DIR:-}${OBJLOG_S3_BLOB_URL:-}" ] && bytes=0
  [ -n "${OBJLOG_BLOB_RELEASE_TOPIC:-}" ] && releases=0
  [ $listen = 1 ] && echo --s3-listen 127.0.0.1:9000 --s3-anonymous
  [ $bytes = 1 ] && echo --blob-dir "$blobs"
  [ $bytes = 1 ] && [ $releases = 1 ] && echo --blob-release-topic objlog.blob-releases
  return 0
}

# --data DIR unless the flags or the environment name one.
data_flags() { # dir objlogd flags...
  local a dir=$1
  shift
  for a in "$@"; do
    case "$a" in --data|--data=*) return 0 ;; esac
  done
  [ -n "${OBJLOG_DATA:-}" ] || echo --data "$dir"
}

# ---- the run command: quiet, one line per stage, a banner when ready ----
# Build, fetch and install output goes to $OBJLOG_HOME/setup.log; the
# terminal gets one line per stage and, on a failure, the log's tail.

run_home() { echo "${OBJLOG_HOME:-$root/objlog-data}"; }

stage() { # what, command...: runs command with its output in the log
  local what=$1 t0 log
  shift
  log="$(run_home)/setup.log"
  t0=$(date +%s)
  printf 'setup: %s ... ' "$what" >&2
  if "$@" >>"$log" 2>&1; then
    echo "done ($(( $(date +%s) - t0 )) s)" >&2
    return 0
  fi
  echo "failed; the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
}

# One objlog per data directory: run.lock is held (flock) by the run
# command and the objlogd it starts, run.info says where they answer.
run_lock() {
  local home
  home=$(run_home)
  mkdir -p "$home"
  exec 9>>"$home/run.lock"
  if ! flock -n 9; then
    echo "setup: objlog already runs on $home:" >&2
    sed 's/^/  /' "$home/run.info" >&2 2>/dev/null || echo "  (starting up)" >&2
    echo "setup: nothing was started or stopped; stop that one with Ctrl-C where it runs (or kill its pid)" >&2
    exit 1
  fi
  : >"$home/run.info"
  : >"$home/setup.log"
}

# Reads objlogd's stdout (OBJLOG_LISTEN=, OBJLOG_S3_LISTEN=, OBJLOG_BOOTSTRAP=,
# OBJLOG_READY) and prints the banner once it is ready.
banner() { # home kafka-bootstrap-or-empty
  local home=$1 boot=$2 line api="" s3="" pid=""
  while IFS= read -r line; do
    case "$line" in
      OBJLOG_LISTEN=*) api="http://${line#OBJLOG_LISTEN=}" ;;
      OBJLOG_S3_LISTEN=*) s3="http://${line#OBJLOG_S3_LISTEN=}" ;;
      OBJLOG_BOOTSTRAP=*) boot="${line#OBJLOG_BOOTSTRAP=} (embedded, in memory)" ;;
      OBJLOG_PID=*) pid=${line#OBJLOG_PID=} ;;
      OBJLOG_READY)
        {
          echo "objlogd (pid ${pid:-?}) is ready"
          echo "  JSON API     $api/v1/   (build/ops/objlog --url $api ...)"
          echo "  status page  $api/"
          [ -n "$s3" ] && echo "  S3 endpoint  $s3   (aws --endpoint-url $s3 s3 ls)"
          [ -n "$boot" ] && echo "  Kafka        $boot   (kcat -b ${boot%% *} -L)"
          echo "  data         $home   (log of this run's setup: $home/setup.log)"
          echo "  stop         Ctrl-C here, or kill ${pid:-its pid}"
        } | tee "$home/run.info" >&2
        ;;
    esac
  done
}

run_durable() {
  local home
  home=$(run_home)
  local kdir="$home/kafka" boot pid status=0
  # (kafka.sh fetches the Kafka jars from Maven Central the first time)
  stage "starting a 1-node Kafka in $kdir" "$root/ops/kafka.sh" start --dir "$kdir" --nodes 1 9>&-
  boot=$(sed -n 's/^KAFKA_BOOTSTRAP=//p' "$home/setup.log" | tail -n 1)
  [ -n "$boot" ] || { echo "setup: Kafka did not start (logs under $kdir)" >&2; exit 1; }
  trap '"$root/ops/kafka.sh" stop --dir "$kdir" >>"$home/setup.log" 2>&1' EXIT
  # shellcheck disable=SC2046 # s3_flags prints words
  "$root/build/query/objlogd" --brokers "$boot" --data "$home/view" \
    $(s3_flags "$home/blobs" "$@") "$@" > >(banner "$home" "$boot") &
  pid=$!
  trap 'kill -TERM $pid 2>/dev/null' INT TERM
  # `wait` returns early when a trapped signal arrives: wait again for the
  # exit status of objlogd itself.
  wait "$pid" || status=$?
  while kill -0 "$pid" 2>/dev/null; do wait "$pid" || status=$?; done
  exit "$status"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  build)
    install_missing
    build_tree build
    ;;
  run)
    run_lock
    stage "checking the Debian packages" install_missing
    # Only what the run starts: the tests and benches build with `test`.
    stage "building objlogd and objlog in build/" build_targets build objlogd objlog
    for a in "$@"; do
      # shellcheck disable=SC2046
      [ "$a" = "--embedded" ] &&
        exec "$root/build/query/objlogd" $(data_flags "$(run_home)/view" "$@") \
          $(s3_flags "$(run_home)/blobs" "$@") "$@" > >(banner "$(run_home)" "")
    done
    run_durable "$@"
    ;;
  test)
    install_missing
    fetch_promtool
    "$root/ops/kafka.sh" fetch >/dev/null   # Kafka jars for the *_kafka tests
    build_tree build
    # Every build type must build (-Werror at -O0 and -O3 warns about
    # different things); about 30 s each on two cores. Their tests are the
    # plain build's.
    build_tree build-debug -DCMAKE_BUILD_TYPE=Debug -DOBJLOG_TEST_KAFKA=OFF
    build_tree build-release -DCMAKE_BUILD_TYPE=Release -DOBJLOG_TEST_KAFKA=OFF
    # The *_kafka variants run in the plain build only (one real cluster
    # per run is enough; under ASan the JVMs and the sanitizer compete).
    build_tree build-asan -DOBJLOG_SANITIZE=ON -DOBJLOG_TEST_KAFKA=OFF
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp}
    run_tests build "plain build"
    run_tests build-asan "AddressSanitizer + UndefinedBehaviorSanitizer build"
    ;;
  compare)
    install_missing "${compare_packages[@]}"
    build_tree build
    "$root/ops/kafka.sh" fetch >/dev/null || echo "setup: no Kafka jars; the Kafka rows are skipped" >&2
    exec "$root/ops/compare/compare.sh" "$@"
    ;;
  *)
    echo "usage: ops/setup.sh run [objlogd flags] | test | build | compare [flags]" >&2
    exit 2
    ;;
esac
