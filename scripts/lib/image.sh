# scripts/lib/image.sh — a FROM scratch image of one static binary, built
# with no registry (sourced; needs WORK, say and die, as scripts/lib/ci.sh
# gives them). image_context DIR writes the context's common part:
#
#   DIR/rootfs/etc/passwd, group   root and nonroot (65532)
#   DIR/rootfs/tmp                 1777
#   DIR/rootfs/etc/ssl/certs/ca-certificates.crt
#                                  the build machine's CA certificates, when it
#                                  has them (for https:// servers)
#   DIR/home/                      empty: the Dockerfile copies it to
#                                  /home/nonroot owned by 65532
#
# the caller adds the binary and its Dockerfile (scripts/image/Dockerfile,
# scripts/image/k6.Dockerfile), then image_build builds it.

image_context() {
	local ctx=$1
	mkdir -p "$ctx/rootfs/etc" "$ctx/rootfs/tmp" "$ctx/home"
	chmod 1777 "$ctx/rootfs/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$ctx/rootfs/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$ctx/rootfs/etc/group"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		mkdir -p "$ctx/rootfs/etc/ssl/certs"
		cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
	else
		say "warning: no /etc/ssl/certs/ca-certificates.crt here: the image cannot check https:// servers"
	fi
}

# image_build DIR TAG [docker build flags...]: builds DIR (a context with
# its Dockerfile) as TAG with the classic builder: FROM scratch and COPY
# need no BuildKit (buildx is a separate package) and no registry. Dies
# with the builder's output when it fails (needs WORK and die).
image_build() {
	local ctx=$1 tag=$2
	shift 2
	DOCKER_BUILDKIT=0 docker build --quiet "$@" -t "$tag" "$ctx" >"$WORK/image-build.log" 2>&1 ||
		{ cat "$WORK/image-build.log" >&2; die "docker build of $tag failed"; }
}
