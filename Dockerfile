# syntax=docker/dockerfile:1
# The rackbench binary in a slim image, for `rackbench k8s job --image`
# (docs/SCALING.md). Build: `make image` (docker build -t rackbench .).
#
# Two stages: Rust on Debian bookworm builds with --locked (the committed
# Cargo.lock, as CI does); the runtime is bookworm-slim with the binary and
# CA certificates only, so the glibc it was linked against is the one it
# runs on. Load goes over plain HTTP; nothing else (Ruby, servers) is
# needed to run `rackbench load`.

ARG RUST_VERSION=1.95
FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# The cache mounts keep the registry and compiled dependencies between
# builds (BuildKit, the default builder since Docker 23).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin rackbench \
    && strip --strip-debug target/release/rackbench \
    && install -m 0755 target/release/rackbench /usr/local/bin/rackbench

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/rackbench /usr/local/bin/rackbench
# A numeric user, so that the Job's `runAsNonRoot: true` can be checked by
# the kubelet (it cannot check a user name).
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin rackbench
USER 10001:10001
ENTRYPOINT ["rackbench"]
CMD ["--help"]
