# seckill: the README's two commands (make run is its go run; make test), and the rest.
#   make run            start the service in embedded mode (no setup needed)
#   make build          bin/seckill and bin/seckill-load, stamped with the release and commit
#   make test-build     compile what make test compiles (every -race test binary, and the
#                       commands without -race, as the tests build them), run nothing
#   make test           start the real test servers, then run every test (-tags integration:
#                       the server tests too) with -race, then
#                       validate docker/ and deploy/kubernetes/ (deploy/validate, offline)
#   make services-up    start Redis, Redis Cluster, MariaDB, RocketMQ, Nacos (scripts/services.sh)
#   make services-down  stop them again
#   make bench          hot-path benchmarks (-tags integration: on the real servers)
#   make lint           gofmt check, go vet, staticcheck and errorlint (installed pinned)

GO        ?= go
# -p 1: one package at a time; the packages share the real servers and 2 cores, and the
# fault drills and Nacos push timing are steadier without a second suite competing
# (scripts/test.sh runs config beside the Redis and MySQL packages, which run two at a time,
# then app, then limiter, each alone). Within a package, tests that mostly wait (the app's fault drills, the simulation's seeds, order's
# pipeline tests) run in parallel with t.Parallel, -parallel (GOMAXPROCS) at a time.
# -trimpath: build actions do not depend on the clone's path, so a fresh clone reuses the Go
# build cache of an earlier one. TEST_BUILD_FLAGS are the flags that decide what is compiled
# (make test-build compiles with them). -vet=off: make lint runs go vet in full, with and
# without -tags integration; go test's own vet (a subset of its checks) would only repeat it,
# at about 27 s of both cores on a cold cache.
TEST_BUILD_FLAGS ?= -race -trimpath -vet=off
TEST_FLAGS ?= $(TEST_BUILD_FLAGS) -count=1 -p 1 -timeout 75m
# A -race binary sleeps 1 s at exit (atexit_sleep_ms, for reports of goroutines still running)
# by default: 1 s per test binary and per child process the tests start. A race inside a
# test fails that test whatever this is; kept as the caller's if GORACE is set.
export GORACE ?= atexit_sleep_ms=0
BENCH     ?= .
# The linters of make lint: pinned versions, installed into .infra/bin (not the module's
# dependencies: they never reach the service's build).
STATICCHECK ?= v0.8.2
ERRORLINT   ?= v1.9.1
LINTBIN     ?= $(CURDIR)/.infra/bin
PKGS      ?= ./...

.PHONY: build test test-build test-build-race test-build-commands run services-up services-down services-status bench lint

# build: bin/seckill and bin/seckill-load, stamped with the release (git describe: the last tag,
# or the commit when there is none; -dirty for local changes) and the commit, which
# `seckill --version` prints and the seckill_build_info metric carries.
.DEFAULT_GOAL := test
BUILD_VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
BUILD_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DIR      ?= bin
# The compile flags are test-build-commands' (the stamp is the linker's), so the build cache
# of one serves the other and a build after the tests only links.
build:
	$(GO) build -ldflags "-X github.com/seckill/seckill/app.version=$(BUILD_VERSION) -X github.com/seckill/seckill/app.revision=$(BUILD_REVISION)" -o $(BUILD_DIR)/ ./cmd/seckill ./cmd/seckill-load

# deploy/validate is a module of its own (compose and Kubernetes libraries stay out of the
# service's module): it checks docker/ and deploy/kubernetes/ offline.
# The limiter's CPU-saturation test runs 60 s alone; 15 s in the full suite.
# Tests that need a real server carry the build tag integration: plain `go test ./...` runs only
# the pure tests (miniredis, SQLite, fakes); -tags integration runs every test.
test: services-up
	GO=$(GO) TEST_FLAGS='$(TEST_FLAGS)' scripts/test.sh
	cd deploy/validate && $(GO) test -count=1 ./...

# test-build: the compiling of make test, with every core (-p 1 applies to builds too), and no
# server needed. The build cache then holds every package make test compiles, in two parts:
#   test-build-race      every -race test binary (-exec true links each and runs true
#                        instead of it), and deploy/validate's;
#   test-build-commands  the commands without -race: the app drills and cmd/seckill's tests
#                        go build them as a user does (the whole dependency tree a second
#                        time, without -race; on a cold cache the console test waited 50 s).
# .ci/run runs test-build-race while the services start, and test-build-commands at nice 19
# beside the suite, on the CPU the tests leave idle (cmd/seckill, the first package that
# needs it, runs last in phase 1, and compiles itself what that build has not reached).
test-build: test-build-race test-build-commands

test-build-race:
	$(GO) test -tags integration $(TEST_BUILD_FLAGS) -count=1 -exec true $(PKGS) >/dev/null
	cd deploy/validate && $(GO) test -count=1 -exec true ./... >/dev/null

test-build-commands:
	$(GO) build ./cmd/seckill ./cmd/seckill-load

run:
	$(GO) run ./cmd/seckill

services-up:
	scripts/services.sh up

services-down:
	scripts/services.sh down

services-status:
	scripts/services.sh status

bench: services-up
	$(GO) test -tags integration -run '^$$' -bench '$(BENCH)' -benchmem $(PKGS)

# third_party/ holds patched copies of upstream code, kept byte-close to upstream: not gofmt-checked.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' ':!:third_party/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	cd deploy/validate && $(GO) vet ./...
	GOBIN=$(LINTBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK)
	GOBIN=$(LINTBIN) $(GO) install codeberg.org/polyfloyd/go-errorlint@$(ERRORLINT)
	$(LINTBIN)/staticcheck -tags integration $(PKGS)
	$(LINTBIN)/go-errorlint -tags integration $(PKGS)
