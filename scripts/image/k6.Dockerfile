# The k6-kbkit image without a registry: k6 with kbkit's extension
# (bin/k6-kbkit, a static build of `make k6`) as /usr/bin/k6 and its
# entrypoint, like the official k6 image, on nothing else (FROM scratch:
# no shell). scripts/k6-image.sh (`make k6-image`) builds it from a context
# holding the binary as ./k6 and rootfs/ and home/ of scripts/lib/image.sh:
# /etc/passwd and /etc/group with root and nonroot (65532), /tmp (1777) and
# the build machine's CA certificates.
#
#   docker run --rm --network host -v "$PWD/examples/k6:/scripts:ro" \
#       -e KBKIT_URL -e KBKIT_TOKEN k6-kbkit:scratch run /scripts/hot-page.js
#
# k6-operator's runners expect a shell in the image: for them,
# examples/k6/k6-operator/Dockerfile puts the same binary on the official
# k6 image.
FROM scratch
COPY rootfs/ /
# The working directory, where k6 writes what it is told to (KBKIT_JSON,
# --summary-export), belongs to the user it runs as.
COPY --chown=65532:65532 home/ /home/nonroot/
COPY k6 /usr/bin/k6
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/bin/k6"]
CMD ["--help"]
LABEL org.opencontainers.image.title="k6-kbkit" \
      org.opencontainers.image.description="k6 with kbkit's extension (k6/x/kbkit) built in" \
      org.opencontainers.image.source="https://github.com/subspace/kbkit"
