# The drover scheduler image: cmd/drover-scheduler, a static Go binary on a
# distroless base, running as a non-root user. Build and push:
#
#   make image IMAGE=registry.example.com/drover-scheduler TAG=v0.1.0
#   docker push registry.example.com/drover-scheduler:v0.1.0
#
# or without a Dockerfile: KO_DOCKER_REPO=registry.example.com/drover-scheduler ko build --bare ./cmd/drover-scheduler
# (see .ko.yaml). docs/kubernetes.md, "Building and pushing the image".

# The Go toolchain of go.mod's go line (a test checks they agree).
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false -ldflags "-s -w" \
		-o /out/drover-scheduler ./cmd/drover-scheduler

# static: no libc, CA certificates and tzdata only; nonroot: UID 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/drover-scheduler /drover-scheduler
USER 65532:65532
ENTRYPOINT ["/drover-scheduler"]
