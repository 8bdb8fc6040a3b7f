# codeinterp — the two commands a newcomer needs:
#   make demo   build every image, start the stack, run a real example
#   make test   build what the tests need and run them all against real Docker, Redis, MinIO
SHELL := /bin/bash
COMPOSE ?= docker-compose
API_URL ?= http://localhost:8080
export TESTCONTAINERS_RYUK_DISABLED := true
# The group owning the Docker socket: the worker and the janitor run unprivileged and
# reach the engine as its members (docker-compose.yml's group_add). Linux's stat, then
# BSD's; set it yourself when the engine's socket has another group inside containers.
ifeq ($(origin CODEINTERP_DOCKER_GID),undefined)
CODEINTERP_DOCKER_GID := $(shell stat -c %g /var/run/docker.sock 2>/dev/null || stat -f %g /var/run/docker.sock 2>/dev/null)
endif
export CODEINTERP_DOCKER_GID

.PHONY: images up demo down logs test test-runsc runsc bench lint clean-test cli

images: ## build every image (skips those whose inputs did not change)
	deploy/images.sh

# The demo and the bench run on the demo secrets docker-compose.yml falls back to,
# which every service refuses without dev mode (CODEINTERP_DEV_MODE=false make up
# checks a real configuration).
up bench: export CODEINTERP_DEV_MODE ?= true

up: images ## start the whole stack and wait until it is ready
	$(COMPOSE) up -d
	@echo -n "waiting for $(API_URL)/readyz "; \
	for i in $$(seq 1 120); do \
	  if curl -sf $(API_URL)/readyz >/dev/null; then echo " ready"; exit 0; fi; \
	  echo -n .; sleep 1; \
	done; echo; curl -s $(API_URL)/readyz; $(COMPOSE) logs --tail=50; exit 1

demo: up ## run the example: CSV in, pandas + matplotlib, presigned URLs out
	go run ./examples/demo

down: ## stop the stack and remove its sandboxes (data volumes are kept)
	$(COMPOSE) down
	@docker ps -aq --filter label=codeinterp.install=$${CODEINTERP_SANDBOX_PREFIX:-codeinterp} | xargs -r docker rm -f >/dev/null
	@docker volume ls -q --filter label=codeinterp.install=$${CODEINTERP_SANDBOX_PREFIX:-codeinterp} | xargs -r docker volume rm -f >/dev/null

logs:
	$(COMPOSE) logs -f

test: images clean-test runsc ## all tests, with the race detector; then the sandbox and end-to-end suites again under gVisor
	go vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go test -race -count=1 -timeout 20m ./...
	$(RUNSC_TEST)

runsc: ## install gVisor (runsc) and register it with Docker (root; idempotent, quick when done)
	deploy/runsc.sh

test-runsc: images clean-test runsc ## the second half of make test alone: the sandbox and end-to-end suites under gVisor
	$(RUNSC_TEST)

# The packages whose tests run real sandboxes, run again with CODEINTERP_SANDBOX_RUNTIME=runsc.
# Left out, because under Debian's runsc (2022-12) a sandbox that reaches its memory
# limit is killed whole by the host (gVisor's kernel and the workspace with it), and
# the engine never ends the kernel's `docker exec` stream, so the run only ends at its
# timeout (docs/DESIGN.md, "Sandbox edges and gVisor"): the out-of-memory tests, and
# the fork-bomb test, whose Python fork bomb reaches the memory limit first.
RUNSC_SKIP = ^(TestDockerConformance|TestOneOffOutcomes)$$/^(OutOfMemory|ForkBomb|oom)$$
RUNSC_TEST = CODEINTERP_SANDBOX_RUNTIME=runsc go test -race -count=1 -timeout 40m -skip '$(RUNSC_SKIP)' ./sandbox/docker/ ./internal/e2e/

clean-test: # containers and volumes left by an interrupted test run (one already going is fine)
	@ids=$$(docker ps -aq --filter label=codeinterp.install=citest; docker ps -aq --filter name=citest-); \
	  [ -z "$$ids" ] || docker rm -f $$ids >/dev/null 2>&1 || true
	@vols=$$(docker volume ls -q --filter label=codeinterp.install=citest); \
	  [ -z "$$vols" ] || docker volume rm -f $$vols >/dev/null 2>&1 || true
	@nets=$$(docker network ls -q --filter name=citest-); \
	  [ -z "$$nets" ] || docker network rm $$nets >/dev/null 2>&1 || true

# The benchmark runs on a stack of its own, started fresh and removed afterwards, so
# it measures an idle system first and never touches the demo stack's data.
BENCH_ENV = COMPOSE_PROJECT_NAME=codeinterp-bench CODEINTERP_API_PORT=18080 CODEINTERP_S3_PORT=19000 \
	CODEINTERP_S3_PUBLIC_URL=http://localhost:19000 CODEINTERP_SANDBOX_PREFIX=cibench \
	CODEINTERP_IDLE_PAUSE=2s CODEINTERP_JANITOR_INTERVAL=1s CODEINTERP_API_KEYS=demo:demo-key,noisy:noisy-key \
	CODEINTERP_TENANT_QUOTAS="demo:rate=100000,burst=100000,active=100000,thread_queue=100000,streams=1000"

bench: images runsc ## latency, throughput and costs on a fresh stack, beside raw Docker baselines
	$(BENCH_ENV) $(COMPOSE) down -v --remove-orphans >/dev/null 2>&1 || true
	$(BENCH_ENV) $(MAKE) --no-print-directory up API_URL=http://localhost:18080
	$(BENCH_ENV) go run ./cmd/bench -url http://localhost:18080 $(BENCH_ARGS); status=$$?; \
	  $(BENCH_ENV) $(COMPOSE) down -v >/dev/null 2>&1; \
	  docker ps -aq --filter label=codeinterp.install=cibench | xargs -r docker rm -f >/dev/null; \
	  docker volume ls -q --filter label=codeinterp.install=cibench | xargs -r docker volume rm -f >/dev/null; \
	  exit $$status

# The fault suite (internal/faults): a stack of its own (deploy/faults, three workers)
# under continuous load while a worker and the API are SIGKILLed, Redis crashes and MinIO
# stops for 20 s; it checks the sandboxes' own logs and operation journals, then removes
# its stack (its own project and sandbox prefix only). Three to five minutes at the
# default size on two cores; FAULTS_ARGS="-threads 10 -each 10 -over 1m" runs a smaller one.
.PHONY: test-faults
test-faults: images
	deploy/faults/images.sh
	go run ./cmd/faults $(FAULTS_ARGS)

cli: ## build the command line into bin/codeinterp
	go build -o bin/codeinterp ./cmd/codeinterp

lint:
	gofmt -l .
	go vet ./...
