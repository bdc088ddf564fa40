# Builds the `warren` executable and packages it in a slim Debian runtime image.
#   docker build -t warren .        docker run --rm warren --help
# docker-compose.yml uses this image for its workers.

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
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/warren /usr/local/bin/warren
ENTRYPOINT ["warren"]
