#!/usr/bin/env bash
# tests/install.sh BUILD_DIR: what `cmake --install` gives a frontend
# developer. Installs BUILD_DIR into a fresh prefix,
# checks every installed file, the shared library's SONAME, the static
# archive's self-containment, `objlogd --version` and `objlog --version`,
# then builds ops/examples/frontend.c against the prefix with pkg-config,
# shared and --static, and runs both against an `objlogd --kafka-only`
# (the mock cluster) started from the prefix. Exits non-zero naming the
# first thing that is wrong; the objlogd it starts dies with it.
set -euo pipefail
build=${1:?usage: tests/install.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/objlog-install-XXXXXX)
kpid=
cleanup() {
  [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
version=$(sed -n 's/^#define OBJLOG_VERSION_STR "\(.*\)"/\1/p' "$src/producer/objlog_producer.h")
major=${version%%.*}
for f in include/objlog_producer.h lib/libobjlog_producer.a lib/libobjlog_producer.so \
         "lib/libobjlog_producer.so.$major" "lib/libobjlog_producer.so.$version" \
         lib/pkgconfig/objlog-producer.pc bin/objlogd bin/objlog share/objlog/objlogd.service; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
soname=$(readelf -d "$prefix/lib/libobjlog_producer.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libobjlog_producer.so.$major" ] || fail "SONAME is '$soname'"
# Self-contained: every objlog symbol the archive uses, it defines.
undef=$(nm "$prefix/lib/libobjlog_producer.a" 2>/dev/null | awk '$1=="U"{print $2}' | sort -u)
defined=$(nm --defined-only "$prefix/lib/libobjlog_producer.a" 2>/dev/null | awk 'NF==3{print $3}' | sort -u)
missing=$(comm -23 <(echo "$undef" | grep -E '^(objlog|keycodec|rangemap|token|control|outcome|topics)_' || true) \
                   <(echo "$defined"))
[ -z "$missing" ] || fail "the archive needs symbols it lacks: $missing"
# Only the public API is exported from the shared library.
exported=$(nm -D --defined-only "$prefix/lib/libobjlog_producer.so" | awk '{print $3}' |
           grep -v -E '^(objlog_producer_|objlog_status_name$|OBJLOG)' || true)
[ -z "$exported" ] || fail "the shared library exports more than its API: $exported"

# Captured first: grep -q may exit before the writer (pipefail, SIGPIPE).
v=$("$prefix/bin/objlogd" --version)
[[ $v == "objlogd $version "* ]] || fail "objlogd --version printed '$v'"
v=$("$prefix/bin/objlog" --version)
[[ $v == "objlog $version "* ]] || fail "objlog --version printed '$v'"
grep '^ExecStart=' "$prefix/share/objlog/objlogd.service" >/dev/null || fail "the unit has no ExecStart"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion objlog-producer)" = "$version" ] || fail "pkg-config --modversion"
# As the README builds it: the rpath finds the library in the prefix, so it
# runs without LD_LIBRARY_PATH or ldconfig.
cc -Wall -Wextra -Werror "$src/ops/examples/frontend.c" -o "$tmp/frontend_shared" \
  $(pkg-config --cflags --libs objlog-producer) \
  -Wl,-rpath,"$(pkg-config --variable=libdir objlog-producer)"
static_libs=$(pkg-config --static --libs objlog-producer | sed 's/-lobjlog_producer//')
cc -Wall -Wextra -Werror "$src/ops/examples/frontend.c" -o "$tmp/frontend_static" \
  $(pkg-config --cflags objlog-producer) "$prefix/lib/libobjlog_producer.a" $static_libs
deps=$(ldd "$tmp/frontend_shared")
[[ $deps == *"libobjlog_producer.so.$major"* ]] || fail "shared frontend: $deps"
deps=$(ldd "$tmp/frontend_static")
[[ $deps != *objlog_producer* ]] || fail "static frontend needs the .so: $deps"

"$prefix/bin/objlogd" --embedded --partitions 2 --listen 127.0.0.1:0 --data "$tmp/view" \
  >"$tmp/k.out" 2>"$tmp/k.err" &
kpid=$!
for _ in $(seq 1 300); do grep -q OBJLOG_READY "$tmp/k.out" && break; sleep 0.1; done
boot=$(sed -n 's/^OBJLOG_BOOTSTRAP=//p' "$tmp/k.out")
url=http://$(sed -n 's/^OBJLOG_LISTEN=//p' "$tmp/k.out")
[ -n "$boot" ] || fail "objlogd --embedded did not start: $(cat "$tmp/k.err")"
# The first run makes the bucket; the second is told it exists (its writes
# still go in): each line is the outcome objlogd applied, waited for.
first="create_bucket: OK token P.O"
again="create_bucket: REJECTED BucketAlreadyExists"
for kind in shared static; do
  want="header $version library $version
refused: kafka.acks cannot be set: the producer always writes with acks=all and enable.idempotence=true
$first
put_object: OK token P.O
put_object NULL meta: OK token P.O"
  got=$("$tmp/frontend_$kind" "$boot" "$url" 2>"$tmp/$kind.err") ||
    fail "$kind frontend exited non-zero: $(cat "$tmp/$kind.err")"
  [ "$got" = "$want" ] || fail "$kind frontend printed:
$got
wanted:
$want"
  first=$again
done
echo "install.sh: prefix, SONAME $soname, static archive self-contained, pkg-config" \
     "shared and --static frontends OK ($version)"
