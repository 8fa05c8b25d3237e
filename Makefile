# dlq — see README.md. `make demo` and `make test` work on a fresh machine.
GO       ?= go
BIN      := bin/dlq
BROKERS  := scripts/brokers
PKGS     := ./...
# The packages with RabbitMQ integration tests: the RabbitMQ 4.x passes run
# these alone (the others' tests, unit tests included, ran in the 3.10 pass).
RABBITPKGS := ./broker/rabbitmq/ ./cmd/ ./inspect/ ./redrive/ ./topology/
# The test servers' addresses and the test password, from scripts/brokers:
# TESTENV is RabbitMQ 3.10 and the SQS emulators (main and fault servers)
# with the 3.10 TLS node, TEST4ENV RabbitMQ 4.0 alone (where the SQS tests
# skip), TEST43ENV RabbitMQ 4.3 alone (its main and fault nodes) with the
# 4.3 TLS node (tls43; the 4.0 one, tls4, is no longer started) and the
# three-node 4.3 cluster (cluster43), which only the 4.3 passes get.
RUNENV    = export DLQ_TEST_REQUIRE_BROKERS=1 DLQ_TEST_BIN=$(CURDIR)/$(BIN) AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 &&
TESTENV   = eval "$$($(BROKERS) env)" && eval "$$(DLQ_BROKERS_INSTANCE=fault $(BROKERS) env)" && \
            eval "$$(DLQ_BROKERS_INSTANCE=tls $(BROKERS) env)" && \
            export DLQ_CLUSTER_SKIP='the cluster tests run in the RabbitMQ 4.3 passes of make test' && $(RUNENV)
TEST4ENV  = eval "$$(DLQ_BROKERS_INSTANCE=test4 $(BROKERS) env)" && eval "$$(DLQ_BROKERS_INSTANCE=fault4 $(BROKERS) env)" && \
            export DLQ_TLS_SKIP='the TLS tests run in the RabbitMQ 3.10 and 4.3 passes of make test' && \
            export DLQ_CLUSTER_SKIP='the cluster tests run in the RabbitMQ 4.3 passes of make test' && $(RUNENV)
TEST43ENV = eval "$$(DLQ_BROKERS_INSTANCE=test43 $(BROKERS) env)" && eval "$$(DLQ_BROKERS_INSTANCE=fault43 $(BROKERS) env)" && \
            eval "$$(DLQ_BROKERS_INSTANCE=tls43 $(BROKERS) env)" && \
            eval "$$(DLQ_BROKERS_INSTANCE=cluster43 $(BROKERS) env)" && $(RUNENV)
INSTANCES = test fault test4 fault4 test43 fault43 cluster43 tls tls43

.PHONY: build test frameworks unit bench lint demo docs release-check release-snapshot brokers-up brokers-down brokers-status fuzz clean

# Static, as the releases are: no dynamic loader or cgo set-up at start.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/dlq

# Unit and integration tests against the real servers (started when missing):
# every package once with RabbitMQ 3.10 and SQS, then the packages with
# RabbitMQ integration tests (RABBITPKGS) once more with RabbitMQ 4.0 (SQS
# tests skip), and once with RabbitMQ 4.3, where a quorum queue's requeue
# does not count, and the cluster tests on the three-node 4.3 cluster. Then
# the redrive fault tests (kills, restarts, blocked brokers on the separate
# fault servers), verbose enough to show their tallies, one log a pass: 3.10
# and SQS, 4.3 with the cluster, then 4.0. The 4.0 pass runs only what
# behaves differently by version: the quorum queue scenarios (4.0-4.2 count
# every requeue, 4.3 does not); the classic queue ones (the blocked
# connection among them) run on 3.10 and 4.3. The 4.x fault servers have no SQS: TestFaultSQS is left out on
# 4.3 and skips itself on 4.0 (DLQ_FAULT_RABBITMQ_ONLY).
FAULTLOG   := bin/fault-tests.log
FAULT4LOG  := bin/fault-tests-rabbitmq4.log
FAULT43LOG := bin/fault-tests-rabbitmq43.log
# $(call faultpass,ENV,LOG[,GO TEST FLAGS])
define faultpass
@echo "fault tests: $(2)"
@$(1) $(GO) test -race -count=1 -timeout 20m -v -run '^TestFault' $(3) ./redrive/ >$(2) 2>&1; rc=$$?; \
  grep -aE 'fault tally|^(ok|FAIL|--- FAIL|panic)' $(2); \
  if [ $$rc -ne 0 ]; then tail -n 100 $(2); scripts/test-failures $(2) 60; exit $$rc; fi
endef
test: brokers-up build frameworks
	$(TESTENV) $(GO) test -race -count=1 -timeout 30m -skip '^TestFault' $(PKGS)
	$(TEST4ENV) $(GO) test -race -count=1 -timeout 30m -skip '^TestFault' $(RABBITPKGS)
	$(TEST43ENV) $(GO) test -race -count=1 -timeout 30m -skip '^TestFault' $(RABBITPKGS)
	$(call faultpass,$(TESTENV),$(FAULTLOG))
	$(call faultpass,$(TEST43ENV),$(FAULT43LOG),-skip '^TestFaultSQS$$')
	$(call faultpass,$(TEST4ENV),$(FAULT4LOG),-skip '^TestFault(RabbitMQ|ConcurrentProcesses)$$/classic$$')

# Real framework clients the integration tests run (Celery from Debian's
# packages, unpacked into a private folder; cached): see scripts/frameworks.
frameworks:
	scripts/frameworks celery >/dev/null

# Unit tests only; integration tests skip without the servers.
unit:
	$(GO) test -race -count=1 $(PKGS)

# Go benchmarks, then the benchmark commands against the real servers
# (scripts/bench/startup.sh: start-up time of dlq --help and dlq version).
bench: brokers-up build
	$(TESTENV) $(GO) test -run '^$$' -bench . -benchmem -benchtime 1x $(PKGS)
	$(TESTENV) for s in scripts/bench/*.sh; do [ -f "$$s" ] && bash "$$s" || exit 1; done

# Short fuzzing of every parser of user input.
fuzz:
	for t in $$(grep -rlE '^func Fuzz' --include='*_test.go' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -hoE '^func Fuzz[A-Za-z0-9_]+' $$t/*_test.go | sed 's/func //'); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 20s $$t || exit 1; done; done

# gofmt, go vet, and shellcheck on every shell script (by its name, .sh or
# .bash, or its #! line). shellcheck is Debian's package, installed when
# missing and removed again by `scripts/brokers uninstall`.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@command -v shellcheck >/dev/null || $(BROKERS) apt-install shellcheck
	@files=$$(git ls-files | while read -r f; do case "$$f" in *.sh | *.bash) echo "$$f" ;; \
	  *) [ -f "$$f" ] && head -n 1 "$$f" | grep -qE '^#!.*[/ ](ba|da)?sh( |$$)' && echo "$$f" ;; esac; done); \
	  echo "shellcheck" $$files; shellcheck $$files

# Man pages (docs/man) and markdown (docs/cli) from the command tree; a test
# in scripts/gendocs fails when the committed ones are stale.
docs:
	$(GO) run ./scripts/gendocs -out docs

# GoReleaser from the Go module proxy (built once, then cached by go run).
GORELEASER := $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1

# Every archive (linux, darwin, windows on amd64 and arm64) and checksums
# into dist/, without publishing anything.
release-snapshot:
	$(GORELEASER) release --snapshot --clean

# CI: validate .goreleaser.yaml, then (unless RELEASE_CHECK_BUILD=0) build
# the linux/amd64 snapshot and check that it reports its version.
RELEASE_CHECK_BUILD ?= 1
release-check:
	$(GORELEASER) check
	@if [ "$(RELEASE_CHECK_BUILD)" != 0 ]; then \
	  GOOS=linux GOARCH=amd64 $(GORELEASER) build --snapshot --clean --single-target --output dist/dlq-snapshot && \
	  dist/dlq-snapshot version; fi

# dlq's main job on the embedded sample archive: no broker needed.
demo: build
	$(BIN) queues --broker demo:
	$(BIN) peek --broker demo: --limit 5 orders.dlq
	$(BIN) stats --broker demo: --group-by reason,source orders.dlq

# The main servers, a separate "fault" set that the fault tests kill,
# restart and block without disturbing the rest of the suite, the same two
# with RabbitMQ 4.0 (test4, fault4) and with RabbitMQ 4.3 (test43, fault43),
# a three-node 4.3 cluster, and a TLS node of 3.10 and 4.3 (tls, tls43): all
# side by side (installs take turns).
brokers-up:
	@start=$$(date +%s); pids=; for i in $(INSTANCES); do DLQ_BROKERS_INSTANCE=$$i $(BROKERS) up & pids="$$pids $$!"; done; \
	  rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	  if [ $$rc = 0 ]; then echo "brokers: every server up in $$(( $$(date +%s) - start ))s (installs included)"; \
	  else echo "brokers: a server did not start: see the line above that names its step (make brokers-up again after the fix)" >&2; fi; exit $$rc

brokers-down:
	@for i in $(INSTANCES); do DLQ_BROKERS_INSTANCE=$$i $(BROKERS) down & done; wait

brokers-status:
	@for i in $(INSTANCES); do echo "$$i:"; DLQ_BROKERS_INSTANCE=$$i $(BROKERS) status | sed 's/^/  /'; done

clean:
	rm -rf bin
