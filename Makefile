# Every target installs what it needs (scripts/deps.sh) so that each works
# on a fresh Debian 12 machine. CI runs exactly `make test`.

CARGO ?= cargo
BIN := target/release/rackbench

.PHONY: all build test lint unit run bench image image-oci cluster cluster-down test-cluster clean

all: build

build:
	scripts/deps.sh build
	$(CARGO) build --release --locked

lint:
	scripts/deps.sh build
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

# A test whose subject (a server, nginx, Chromium, io_uring) is missing
# prints one `SKIP:` line and passes; RACKBENCH_REQUIRE=all (.ci/run) makes
# it fail instead.
unit:
	scripts/deps.sh test
	scripts/jruby-jetty.sh build
	scripts/jruby-puma.sh build
	$(CARGO) test --locked
	# The engine's tests once more on the epoll loop (the run above uses
	# io_uring where the kernel has it).
	RACKBENCH_TEST_IO=epoll $(CARGO) test --locked --test load_engine

test: lint unit

# The main job: the built-in default plan (every installed server, three
# apps, two concurrency levels, two repeats). The servers' packages install
# while the build runs.
run:
	scripts/deps.sh build
	scripts/deps.sh run & deps=$$!; \
	  $(CARGO) build --release --locked; built=$$?; \
	  wait $$deps && [ $$built -eq 0 ]
	$(BIN) run

# rackbench against its peers (wrk, hey, ab, h2load, oha) on one nginx;
# rackbench's latency on every loop against wrk's and the test server's
# own; the break-point search against seed 000's linear search; the open
# loop's CPU while every connection waits on a 1 s server; ten thousand
# connections beside wrk; pipelining beside wrk; the open loop beside
# vegeta and the closed loop; a request mix against one URL.
bench: build
	scripts/deps.sh bench
	RACKBENCH=$(BIN) bench/peers.sh --install --repeat 3
	RACKBENCH=$(BIN) bench/truth.sh
	RACKBENCH=$(BIN) bench/breakpoint.sh
	RACKBENCH=$(BIN) bench/openloop-idle.sh
	RACKBENCH=$(BIN) bench/connections.sh
	RACKBENCH=$(BIN) bench/pipeline.sh
	RACKBENCH=$(BIN) bench/openloop.sh
	RACKBENCH=$(BIN) bench/mix.sh

# The container image for `rackbench k8s job --image` (Dockerfile; needs a
# Docker engine with BuildKit and access to a registry holding rust and
# debian images). Push it where the cluster can pull it, e.g.
# make image IMAGE=registry.example/rackbench:0.1 && docker push ...
IMAGE ?= rackbench:latest
image:
	docker build -t $(IMAGE) .

# The same image with no Docker engine and no registry: the release binary
# and its shared libraries on an empty root, as an OCI archive for
# `ctr images import` (scripts/oci-image.sh). IMAGE_TAR is where it goes.
IMAGE_TAR ?= target/rackbench-image.tar
image-oci: build
	scripts/oci-image.sh rackbench $(IMAGE_TAR) $(IMAGE)

# A Kubernetes cluster on this machine for `rackbench k8s run` (root; the
# first run builds Kubernetes from source, about 11 min on 2 cores, then cached):
# NODES=2 puts the second node in a network namespace. scripts/cluster.sh
# prints the KUBECONFIG to export; `make cluster-down` removes it all.
NODES ?= 2
cluster: build
	scripts/deps.sh cluster
	scripts/cluster.sh up --nodes $(NODES)

cluster-down:
	scripts/cluster.sh down

# tests/cluster.rs on a real two-node cluster (builds Kubernetes first if
# it is not cached). `make test` runs it only when the binaries are cached.
test-cluster:
	scripts/deps.sh build cluster
	scripts/cluster.sh build
	RACKBENCH_REQUIRE=kubernetes $(CARGO) test --locked --test cluster -- --nocapture

clean:
	$(CARGO) clean
