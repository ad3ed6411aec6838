# syntax=docker/dockerfile:1

# Build:  docker build -t oncemq --build-arg VERSION=$(git describe --tags --always) .
# Try:    docker run -p 127.0.0.1:1883:1883 -e ONCEMQ_ALLOW_ANONYMOUS=true -v oncemq-data:/data oncemq
# Deploy: docker run -p 8883:8883 -v /srv/oncemq:/etc/oncemq:ro -v oncemq-data:/data oncemq
#         with /srv/oncemq/oncemq.yaml, its password file and certificates on the host.
# Inside the container the broker listens on :1883, which is not loopback: without a password
# file it refuses to start unless anonymous access is allowed on purpose, hence the quick start
# publishes the port on the host's loopback only. README's "Securing oncemq" has both setups.
# Settings go in ONCEMQ_* variables (-e ONCEMQ_LOG_LEVEL=debug), in the mounted config file, or
# as flags after the image name, which replace CMD: serve --config /etc/oncemq/oncemq.yaml ...

# golang:1.26 tracks the newest 1.26.x; it must be at least the go line of go.mod, because the
# image sets GOTOOLCHAIN=local and will not download a newer toolchain.
FROM golang:1.26-bookworm AS build
WORKDIR /src

# Modules first, in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/oncemq ./cmd/oncemq

# The state directory, owned by distroless's nonroot user (65532); the final image has no shell
# to create it. A named volume mounted on /data starts with this owner.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/oncemq /oncemq
COPY --from=build --chown=65532:65532 /out/data /data
# The default config (listen on :1883, state in /data). Mount a folder on /etc/oncemq with your
# own oncemq.yaml, password file and certificates to replace it (read-only is enough). Listeners
# are not set by ENV: a variable would beat the mounted file's listeners.
COPY cmd/oncemq/docker.yaml /etc/oncemq/oncemq.yaml
USER 65532:65532
VOLUME ["/data"]
# cmd/oncemq/docker.yaml opens the admin listener (metrics, health) on :9100; the health check probes
# its /readyz with the binary itself (the image has no shell or curl), on 127.0.0.1:9100.
EXPOSE 1883 9100
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["/oncemq", "health", "--http", "127.0.0.1:9100"]
# SIGTERM (docker stop) shuts down cleanly within 10 s; docker stop waits 10 s by default, so
# give it more with: docker stop -t 15, or stop_grace_period in compose.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/oncemq"]
CMD ["serve", "--config", "/etc/oncemq/oncemq.yaml"]
