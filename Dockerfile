# syntax=docker/dockerfile:1
# The agentd image: one static binary on distroless, run as a non-root user.
#
#   docker build -t agentd .            (or: podman build -t agentd .)
#   docker run -p 8080:8080 agentd      (SQLite in the volume /data)
#
# The SQLite driver (mattn/go-sqlite3) is cgo, so the build stage compiles
# with gcc and links statically (netgo and osusergo keep glibc's resolver
# and user lookup out; no SQLite extension loading, so no dlopen). The
# result needs no libc: the runtime stage is distroless/static, which has CA
# certificates, time zones and a nonroot user, and no shell or curl; the
# HEALTHCHECK therefore runs `agentd healthcheck`.

ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 go build -trimpath \
      -tags 'netgo osusergo sqlite_omit_load_extension' \
      -ldflags "-s -w -X main.version=${VERSION} -linkmode external -extldflags -static" \
      -o /out/agentd ./cmd/agentd \
 && /out/agentd version \
 && mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/agentd /usr/local/bin/agentd
# /data holds the SQLite database when AGENTD_DB is not a postgres:// URL.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
ENV AGENTD_ADDR=:8080 \
    AGENTD_DB=/data/agentd.db
EXPOSE 8080
VOLUME /data
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/agentd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/agentd"]
CMD ["serve"]
