# Builds the `warren` executable and packages it in a slim Debian runtime image, run as a user without privileges.
#   docker build -t warren .        docker run --rm warren --help
# docker-compose.yml uses this image for its workers and for one-off commands.

FROM swift:6.2-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends librabbitmq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Resolve dependencies in their own layer so source edits don't refetch them.
COPY Package.* ./
RUN swift package resolve
COPY Sources ./Sources
# SwiftPM insists that the directories of declared test targets exist.
COPY Tests ./Tests
RUN swift build -c release --product warren --static-swift-stdlib \
    && install -D "$(swift build -c release --show-bin-path)/warren" /out/warren

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends librabbitmq4 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 warren \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/warren --create-home \
        --shell /usr/sbin/nologin warren
COPY --from=build /out/warren /usr/local/bin/warren
# A numeric user, so that a platform that refuses root (Kubernetes' runAsNonRoot) can tell.
USER 10001:10001
WORKDIR /var/lib/warren
# The crash journals of the workers (docs/operations.md): in the container, kept across its restarts.
ENV WARREN_STATE_DIR=/var/lib/warren
ENTRYPOINT ["warren"]
