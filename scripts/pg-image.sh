#!/usr/bin/env bash
# pg-image.sh — build a local Docker image from THIS machine's PostgreSQL
# install, without any registry: a minimal root filesystem (the postgres
# binaries and modules plus every shared library ldd reports for them,
# /usr/share/postgresql/VERSION, time zone data, /bin/sh and setpriv,
# /etc/passwd and /etc/group with a postgres user, /tmp 1777) packed into a
# tar and loaded with `docker import`.
#
# The image has no entrypoint; server/pgprovider runs it with host
# networking and its own command (KBKIT_DOCKER_NETWORK=host,
# KBKIT_PG_IMAGE=<tag>, KBKIT_PG_BIN_IN_IMAGE=/usr/lib/postgresql/VERSION/bin;
# also TESTCONTAINERS_RYUK_DISABLED=true when no registry is reachable).
set -euo pipefail

usage() {
	cat <<EOF
usage: $(basename "$0") [-t TAG] [-v VERSION] [-o FILE.tar] [-h]

Build a Docker image from this machine's PostgreSQL VERSION install
(/usr/lib/postgresql/VERSION, /usr/share/postgresql/VERSION) with
\`docker import\`; prints the tag on success.

  -t TAG      image tag (default kbkit/postgres-local:VERSION)
  -v VERSION  PostgreSQL major version to package (default 15)
  -o FILE     only write the root filesystem tar to FILE; no docker needed
  -h          this help

Use it with server/pgprovider:
  KBKIT_PG=docker KBKIT_DOCKER_NETWORK=host KBKIT_PG_IMAGE=TAG \\
  KBKIT_PG_BIN_IN_IMAGE=/usr/lib/postgresql/VERSION/bin \\
  TESTCONTAINERS_RYUK_DISABLED=true go test ./...
EOF
}

VERSION=15
TAG=
OUT=
while getopts ':t:v:o:h' opt; do
	case "$opt" in
	t) TAG=$OPTARG ;;
	v) VERSION=$OPTARG ;;
	o) OUT=$OPTARG ;;
	h) usage; exit 0 ;;
	:) echo "pg-image.sh: -$OPTARG needs an argument" >&2; usage >&2; exit 2 ;;
	*) echo "pg-image.sh: unknown option -$OPTARG" >&2; usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 0 ]; then
	echo "pg-image.sh: unexpected arguments: $*" >&2
	usage >&2
	exit 2
fi
TAG=${TAG:-kbkit/postgres-local:$VERSION}

PGLIB=/usr/lib/postgresql/$VERSION
PGSHARE=/usr/share/postgresql/$VERSION
PG_UID=999
PG_GID=999

die() { echo "pg-image.sh: $*" >&2; exit 1; }

for b in initdb postgres pg_ctl; do
	[ -x "$PGLIB/bin/$b" ] || die "$PGLIB/bin/$b not found (apt-get install -y postgresql-$VERSION, or pick another -v)"
done
[ -d "$PGSHARE" ] || die "$PGSHARE not found (initdb needs it)"
for t in ldd tar; do
	command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
if [ -z "$OUT" ]; then
	command -v docker >/dev/null 2>&1 || die "docker CLI not found (use -o FILE to only write the tar)"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/rootfs
mkdir -p "$ROOT"

# copy_path SRC: copy SRC (dereferenced) to the same absolute path in ROOT.
copy_path() {
	local src=$1
	mkdir -p "$ROOT$(dirname "$src")"
	cp -L "$src" "$ROOT$src"
}

# Programs and loadable modules. llvmjit (it drags in libLLVM, ~100 MB) is
# left out: without it the server simply runs with JIT unavailable.
mkdir -p "$ROOT$PGLIB"
cp -a "$PGLIB/bin" "$ROOT$PGLIB/"
mkdir -p "$ROOT$PGLIB/lib"
find "$PGLIB/lib" -mindepth 1 -maxdepth 1 ! -name 'llvmjit*' ! -name bitcode -exec cp -a {} "$ROOT$PGLIB/lib/" \;
mkdir -p "$ROOT$(dirname "$PGSHARE")"
cp -a "$PGSHARE" "$ROOT$PGSHARE"
# Debian builds with --with-system-tzdata=/usr/share/zoneinfo.
if [ -d /usr/share/zoneinfo ]; then
	mkdir -p "$ROOT/usr/share"
	cp -a /usr/share/zoneinfo "$ROOT/usr/share/"
fi

# Shell and the root -> postgres switch used by pgprovider (setpriv needs
# no PAM configuration, unlike su/runuser).
mkdir -p "$ROOT/bin" "$ROOT/usr/bin"
cp -L /bin/sh "$ROOT/bin/sh"
EXTRA_BINS=("$ROOT/bin/sh")
if command -v setpriv >/dev/null 2>&1; then
	cp -L "$(command -v setpriv)" "$ROOT/usr/bin/setpriv"
	EXTRA_BINS+=("$ROOT/usr/bin/setpriv")
else
	echo "pg-image.sh: warning: setpriv not found (apt-get install -y util-linux); the image cannot drop root" >&2
fi

# Shared libraries of everything executable or loadable we copied, resolved
# on the host (the copies are byte-identical). ldd prints either
# "libx.so.1 => /path/libx.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)".
LIBS=$WORK/libs
: >"$LIBS"
while IFS= read -r -d '' f; do
	# Only ELF files (magic \177ELF); the copies are byte-identical to the
	# host's, so ldd resolves their libraries against the host.
	magic=$(head -c 4 "$f" | tail -c 3 || true)
	[ "$magic" = ELF ] || continue
	out=$(ldd "$f" 2>/dev/null || true)
	if grep -q 'not found' <<<"$out"; then
		echo "pg-image.sh: warning: ${f#"$ROOT"}: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ' | paste -sd ';')" >&2
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out" >>"$LIBS"
done < <(find "$ROOT$PGLIB" "${EXTRA_BINS[@]}" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
sort -u "$LIBS" | while IFS= read -r lib; do
	copy_path "$lib"
done

# The loader must find the libraries without the host's cache: list every
# directory we filled and build a cache for the image if ldconfig exists.
sort -u "$LIBS" | xargs -r -n1 dirname | sort -u >"$WORK/libdirs"
mkdir -p "$ROOT/etc"
cp "$WORK/libdirs" "$ROOT/etc/ld.so.conf"
LDCONFIG=$(command -v ldconfig || true)
[ -z "$LDCONFIG" ] && [ -x /sbin/ldconfig ] && LDCONFIG=/sbin/ldconfig
if [ -n "$LDCONFIG" ]; then
	"$LDCONFIG" -r "$ROOT" || echo "pg-image.sh: warning: ldconfig -r failed; relying on LD_LIBRARY_PATH" >&2
fi
LD_PATH=$(paste -sd: "$WORK/libdirs")

# Users, name service, directories.
cat >"$ROOT/etc/passwd" <<EOF
root:x:0:0:root:/root:/bin/sh
postgres:x:$PG_UID:$PG_GID:PostgreSQL administrator:/var/lib/postgresql:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
cat >"$ROOT/etc/group" <<EOF
root:x:0:
postgres:x:$PG_GID:
nogroup:x:65534:
EOF
cat >"$ROOT/etc/nsswitch.conf" <<EOF
passwd: files
group: files
shadow: files
hosts: files
EOF
echo "127.0.0.1 localhost" >"$ROOT/etc/hosts"
mkdir -p "$ROOT/tmp" "$ROOT/root" "$ROOT/var/lib/postgresql" "$ROOT/var/run/postgresql" \
	"$ROOT/dev" "$ROOT/proc" "$ROOT/sys"
# Owners are all root in the tar (built without root); the places postgres
# writes to are world-writable with the sticky bit instead.
chmod 1777 "$ROOT/tmp" "$ROOT/var/lib/postgresql" "$ROOT/var/run/postgresql"
chmod 0700 "$ROOT/root"

TAR=${OUT:-$WORK/rootfs.tar}
tar -C "$ROOT" --numeric-owner --owner=0 --group=0 -cf "$TAR" .

if [ -n "$OUT" ]; then
	echo "$OUT"
	exit 0
fi

docker import \
	--change "ENV PATH=$PGLIB/bin:/usr/bin:/bin" \
	--change "ENV LD_LIBRARY_PATH=$LD_PATH" \
	--change "ENV LANG=C" \
	--change "ENV LC_ALL=C" \
	--change 'CMD ["/bin/sh"]' \
	--message "kbkit: PostgreSQL $VERSION from $(uname -n) via scripts/pg-image.sh" \
	"$TAR" "$TAG" >/dev/null
echo "$TAG"
