# codeinterp — the two commands a newcomer needs:
#   make demo   build every image, start the stack, run a real example
#   make test   build what the tests need and run them all against real Docker, Redis, MinIO
SHELL := /bin/bash
COMPOSE ?= docker-compose
API_URL ?= http://localhost:8080
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: images up demo down logs test bench lint clean-test cli

images: ## build every image (skips those whose inputs did not change)
	deploy/images.sh

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

test: images clean-test ## all tests, with the race detector
	go vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go test -race -count=1 -timeout 20m ./...

clean-test: # containers and volumes left by an interrupted test run
	@ids=$$(docker ps -aq --filter label=codeinterp.install=citest; docker ps -aq --filter name=citest-); \
	  [ -z "$$ids" ] || docker rm -f $$ids >/dev/null
	@vols=$$(docker volume ls -q --filter label=codeinterp.install=citest); \
	  [ -z "$$vols" ] || docker volume rm -f $$vols >/dev/null

# The benchmark runs on a stack of its own, started fresh and removed afterwards, so
# it measures an idle system first and never touches the demo stack's data.
BENCH_ENV = COMPOSE_PROJECT_NAME=codeinterp-bench CODEINTERP_API_PORT=18080 CODEINTERP_S3_PORT=19000 \
	CODEINTERP_S3_PUBLIC_URL=http://localhost:19000 CODEINTERP_SANDBOX_PREFIX=cibench \
	CODEINTERP_IDLE_PAUSE=2s CODEINTERP_JANITOR_INTERVAL=1s CODEINTERP_API_KEYS=demo:demo-key,noisy:noisy-key \
	CODEINTERP_TENANT_QUOTAS="demo:rate=100000,burst=100000,active=100000,thread_queue=100000,streams=1000"

bench: images ## latency, throughput and costs on a fresh stack, beside raw Docker baselines
	$(BENCH_ENV) $(COMPOSE) down -v --remove-orphans >/dev/null 2>&1 || true
	$(BENCH_ENV) $(MAKE) --no-print-directory up API_URL=http://localhost:18080
	$(BENCH_ENV) go run ./cmd/bench -url http://localhost:18080; status=$$?; \
	  $(BENCH_ENV) $(COMPOSE) down -v >/dev/null 2>&1; \
	  docker ps -aq --filter label=codeinterp.install=cibench | xargs -r docker rm -f >/dev/null; \
	  docker volume ls -q --filter label=codeinterp.install=cibench | xargs -r docker volume rm -f >/dev/null; \
	  exit $$status

cli: ## build the command line into bin/codeinterp
	go build -o bin/codeinterp ./cmd/codeinterp

lint:
	gofmt -l .
	go vet ./...
