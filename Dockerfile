# The mock as an image: `docker run --rm -p 8080:8080 IMAGE` serves it on port 8080 of the
# host, and `docker exec CONTAINER platform-mock token` prints a token it accepts. Options
# come from PLATFORM_MOCK_<OPTION> variables (`-e PLATFORM_MOCK_SEED=7`) or after the image's
# name (`IMAGE serve --seed 7`); the command line wins.

# The wheel, built from the repository's own files (as `pip install .` builds it).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mock_server ./mock_server
COPY spec ./spec
COPY fixtures ./fixtures
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# The image: the wheel and its dependencies on a slim Python, run by a user of its own.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 --user-group mock
USER 10001:10001
WORKDIR /home/mock
# Bound to every address of the container, for a published port. The admin API still answers
# only its own host: a request must name localhost or 127.0.0.1 (at any port, as a port
# mapping publishes it), never another name a page could resolve here (see --allowed-host
# and --host-check in the README). Add the name other containers use for it, such as
# `-e PLATFORM_MOCK_ALLOWED_HOST="localhost 127.0.0.1 mock"`.
ENV PLATFORM_MOCK_HOST=0.0.0.0 \
    PLATFORM_MOCK_PORT=8080 \
    PLATFORM_MOCK_ALLOWED_HOST="localhost 127.0.0.1"
EXPOSE 8080
# Ready once the mock answers (GET /__admin/health: no token, recorded nowhere), on the port
# PLATFORM_MOCK_PORT names.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/__admin/health' % os.environ.get('PLATFORM_MOCK_PORT', '8080'), timeout=4)"]
ENTRYPOINT ["platform-mock"]
CMD ["serve"]
