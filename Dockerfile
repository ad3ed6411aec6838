# syntax=docker/dockerfile:1

# Build:  docker build -t oncemq --build-arg VERSION=$(git describe --tags --always) .
# Run:    docker run -p 1883:1883 -v oncemq-data:/data oncemq
# Flags go after the image name (docker run oncemq serve --log-level debug) or as ONCEMQ_* variables.

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
USER 65532:65532
VOLUME ["/data"]
ENV ONCEMQ_LISTEN=:1883 ONCEMQ_DATA=/data ONCEMQ_HTTP_LISTEN=:9100
EXPOSE 1883 9100
# The image has no shell or curl: the binary probes its own /readyz (ONCEMQ_HTTP_LISTEN).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["/oncemq", "health"]
# SIGTERM (docker stop) shuts down cleanly within 10 s; docker stop waits 10 s by default, so
# give it more with: docker stop -t 15, or stop_grace_period in compose.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/oncemq"]
CMD ["serve"]
